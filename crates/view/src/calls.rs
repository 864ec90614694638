//! The open-call table: which cards are open, under which ids, in which order.
//!
//! A card's id is `<turn>:<step>:<call id>`, suffixed `:2`, `:3` … when a step repeats a
//! call id (a repaired or hostile log may), so ids are unique in a session and a replay
//! gives the ids the live session gave. A result closes the earliest open card of its step
//! with its call id.

use std::collections::HashMap;
use std::sync::Arc;

use dsh_session::ToolCallRecord;

use crate::card::Card;

/// One step's calls with one call id.
type Key = (u32, u32, String);

/// An open card and the record it was opened from.
pub(crate) struct OpenCall {
    pub card: Arc<Card>,
    pub record: ToolCallRecord,
}

#[derive(Default)]
pub(crate) struct Calls {
    /// The open cards, in opening order. Few are open at once (a step's calls), so a
    /// search through them is cheaper than any index kept beside them.
    open: Vec<OpenCall>,
    /// Per step and call id: how many cards have used it.
    used: HashMap<Key, u32>,
}

impl Calls {
    /// The id the next card of this call gets.
    pub fn next_id(&mut self, call: &ToolCallRecord) -> String {
        let used = self
            .used
            .entry((call.turn, call.step, call.call_id.clone()))
            .or_insert(0);
        *used += 1;
        match *used {
            1 => format!("{}:{}:{}", call.turn, call.step, call.call_id),
            n => format!("{}:{}:{}:{n}", call.turn, call.step, call.call_id),
        }
    }

    pub fn insert(&mut self, open: OpenCall) {
        self.open.push(open);
    }

    fn of_call(&self, turn: u32, step: u32, call_id: &str) -> impl Iterator<Item = &OpenCall> {
        self.open.iter().filter(move |open| {
            open.record.turn == turn && open.record.step == step && open.record.call_id == call_id
        })
    }

    /// The earliest open card of this step with this call id: the one a result closes.
    pub fn first(&self, turn: u32, step: u32, call_id: &str) -> Option<&String> {
        self.of_call(turn, step, call_id)
            .next()
            .map(|open| &open.card.id)
    }

    /// The latest open card of this step with this call id: the one running output and a
    /// question are about.
    pub fn last(&self, turn: u32, step: u32, call_id: &str) -> Option<&OpenCall> {
        self.of_call(turn, step, call_id).last()
    }

    /// The open cards of `turn` (all of them when `None`), in opening order.
    pub fn of_turn(&self, turn: Option<u32>) -> Vec<String> {
        self.open
            .iter()
            .filter(|open| turn.is_none_or(|t| open.record.turn == t))
            .map(|open| open.card.id.clone())
            .collect()
    }

    pub fn take(&mut self, id: &str) -> Option<OpenCall> {
        let at = self.open.iter().position(|open| open.card.id == id)?;
        Some(self.open.remove(at))
    }
}
