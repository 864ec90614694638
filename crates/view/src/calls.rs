//! The open-call table: which cards are open, under which ids, in which order.
//!
//! A card's id is `<turn>:<step>:<call id>`, suffixed `:2`, `:3` … when a step repeats a
//! call id (a repaired or hostile log may), so ids are unique in a session and a replay
//! gives the ids the live session gave. A result closes the earliest open card of its step
//! with its call id.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use dsh_session::ToolCallRecord;

use crate::card::Card;

/// An open card and the record it was opened from.
pub(crate) struct OpenCall {
    pub card: Arc<Card>,
}

#[derive(Default)]
pub(crate) struct Calls {
    /// The open cards, in opening order. Few are open at once (a step's calls), so a
    /// search through them is cheaper than any index kept beside them.
    open: Vec<OpenCall>,
    /// Per step and call id (hashed, so counting allocates nothing): how many cards have
    /// used it. Two ids that hash alike share a count, which only adds a suffix: ids stay
    /// unique.
    used: HashMap<(u32, u32, u64), u32>,
}

impl Calls {
    /// The id the next card of this call gets.
    pub fn next_id(&mut self, call: &ToolCallRecord) -> String {
        let hashed = {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            call.call_id.hash(&mut hasher);
            hasher.finish()
        };
        let used = self.used.entry((call.turn, call.step, hashed)).or_insert(0);
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
            let call = &open.card.call;
            call.turn == turn && call.step == step && call.call_id == call_id
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

    /// The latest open card with this call id, in any step.
    pub fn last_of_call(&self, call_id: &str) -> Option<&OpenCall> {
        self.open
            .iter()
            .rev()
            .find(|open| open.card.call.call_id == call_id)
    }

    /// The open cards of `turn` (all of them when `None`), in opening order.
    pub fn of_turn(&self, turn: Option<u32>) -> Vec<String> {
        self.open
            .iter()
            .filter(|open| turn.is_none_or(|t| open.card.call.turn == t))
            .map(|open| open.card.id.clone())
            .collect()
    }

    pub fn take(&mut self, id: &str) -> Option<OpenCall> {
        let at = self.open.iter().position(|open| open.card.id == id)?;
        Some(self.open.remove(at))
    }
}
