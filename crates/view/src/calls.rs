//! The open-call table: which cards are open, under which ids, in which order.
//!
//! A card's id is `<turn>:<step>:<call id>`, suffixed `:2`, `:3` … when a step repeats a
//! call id (a repaired or hostile log may), so ids are unique in a session and a replay
//! gives the ids the live session gave. A result closes the earliest open card of its step
//! with its call id.

use std::collections::HashMap;

use dsh_session::ToolCallRecord;

use crate::card::Card;

/// One step's calls with one call id.
type Key = (u32, u32, String);

/// An open card and the record it was opened from.
pub(crate) struct OpenCall {
    pub card: Card,
    pub record: ToolCallRecord,
}

#[derive(Default)]
pub(crate) struct Calls {
    open: HashMap<String, OpenCall>,
    /// Opening order, so closures come out in a stable order.
    order: Vec<String>,
    /// Per step and call id: the card ids still open, earliest first.
    by_call: HashMap<Key, Vec<String>>,
    /// Per step and call id: how many cards have used it.
    used: HashMap<Key, u32>,
}

impl Calls {
    /// The id the next card of this call gets.
    pub fn next_id(&mut self, call: &ToolCallRecord) -> String {
        let n = self
            .used
            .entry((call.turn, call.step, call.call_id.clone()))
            .or_insert(0);
        *n += 1;
        match *n {
            1 => format!("{}:{}:{}", call.turn, call.step, call.call_id),
            n => format!("{}:{}:{}:{n}", call.turn, call.step, call.call_id),
        }
    }

    pub fn insert(&mut self, open: OpenCall) {
        let key = (
            open.record.turn,
            open.record.step,
            open.record.call_id.clone(),
        );
        let id = open.card.id.clone();
        self.by_call.entry(key).or_default().push(id.clone());
        self.order.push(id.clone());
        self.open.insert(id, open);
    }

    /// The earliest open card of this step with this call id: the one a result closes.
    pub fn first(&self, turn: u32, step: u32, call_id: &str) -> Option<&String> {
        self.by_call
            .get(&(turn, step, call_id.to_owned()))
            .and_then(|ids| ids.first())
    }

    /// The latest open card of this step with this call id: the one running output and a
    /// question are about.
    pub fn last(&self, turn: u32, step: u32, call_id: &str) -> Option<&OpenCall> {
        let ids = self.by_call.get(&(turn, step, call_id.to_owned()))?;
        self.open.get(ids.last()?)
    }

    /// The open cards of `turn` (all of them when `None`), in opening order.
    pub fn of_turn(&self, turn: Option<u32>) -> Vec<String> {
        self.order
            .iter()
            .filter(|id| {
                self.open
                    .get(*id)
                    .is_some_and(|call| turn.is_none_or(|t| call.record.turn == t))
            })
            .cloned()
            .collect()
    }

    pub fn take(&mut self, id: &str) -> Option<OpenCall> {
        let call = self.open.remove(id)?;
        self.order.retain(|o| o != id);
        let key = (
            call.record.turn,
            call.record.step,
            call.record.call_id.clone(),
        );
        if let Some(ids) = self.by_call.get_mut(&key) {
            ids.retain(|o| o != id);
            if ids.is_empty() {
                self.by_call.remove(&key);
            }
        }
        Some(call)
    }
}
