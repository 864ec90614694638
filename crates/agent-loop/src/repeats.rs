//! A turn's guard against a model going in circles: the same call, with the same arguments,
//! getting the same result, again and again. A weak model was seen to read a file, write it
//! and read it again for a whole step; nothing it is told then changes what it does, and
//! every step costs a request.
//!
//! The rule: calls that ran are counted in model order across the turn's steps. A call that
//! would be the third identical one in a row, after two that gave the same result, does not
//! run, and its result tells the model why — once. The next such call ends the turn
//! (`repeated_call`): the loop stops feeding a model that was told and did not change
//! course. A call whose result changes (polling a task that prints) is no repeat.

use serde_json::Value;

/// What to do with a call.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Run it.
    Run,
    /// Do not run it; its result is this note.
    Refuse(String),
    /// Do not run it, and end the turn.
    EndTurn,
}

/// How many identical calls in a row the third of which does not run.
const REPEATS: u32 = 3;

/// The calls of one turn so far.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    /// The last call that ran: its tool, arguments and result.
    last: Option<(String, Value, String)>,
    /// How many times in a row it ran with that result.
    run: u32,
    /// The model was told once already.
    warned: bool,
}

impl Repeats {
    /// What to do with a call to `tool` with `args`, about to run.
    pub(crate) fn verdict(&mut self, tool: &str, args: &Value) -> Verdict {
        let same = self
            .last
            .as_ref()
            .is_some_and(|(name, last, _)| name == tool && last == args);
        if !same || self.run + 1 < REPEATS {
            return Verdict::Run;
        }
        if self.warned {
            return Verdict::EndTurn;
        }
        self.warned = true;
        Verdict::Refuse(format!(
            "Not run: this is the same `{tool}` call with the same arguments {REPEATS} times in a row, and the last {} gave the same result. Use what they returned, try something different, or answer. Repeating it again ends the turn.",
            REPEATS - 1
        ))
    }

    /// A call that ran (or failed) gave `result`; in model order.
    pub(crate) fn finished(&mut self, tool: &str, args: &Value, result: &str) {
        let same = self
            .last
            .as_ref()
            .is_some_and(|(name, last, answer)| name == tool && last == args && answer == result);
        if same {
            self.run += 1;
        } else {
            self.last = Some((tool.to_owned(), args.clone(), result.to_owned()));
            self.run = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_third_identical_call_is_refused_once_and_the_next_ends_the_turn() {
        let mut repeats = Repeats::default();
        let read = json!({"path": "calc.py"});
        for _ in 0..2 {
            assert_eq!(repeats.verdict("read", &read), Verdict::Run);
            repeats.finished("read", &read, "1 + 1");
        }
        assert!(
            matches!(repeats.verdict("read", &read), Verdict::Refuse(note) if note.contains("`read`"))
        );
        assert_eq!(repeats.verdict("read", &read), Verdict::EndTurn);
    }

    #[test]
    fn a_different_call_or_a_changed_result_is_no_repeat() {
        let mut repeats = Repeats::default();
        let (a, b) = (json!({"path": "a"}), json!({"path": "b"}));
        for _ in 0..5 {
            assert_eq!(repeats.verdict("read", &a), Verdict::Run);
            repeats.finished("read", &a, "A");
            assert_eq!(repeats.verdict("read", &b), Verdict::Run);
            repeats.finished("read", &b, "B");
        }
        // Polling a task whose output grows.
        let poll = json!({"id": "t1"});
        for n in 0..5 {
            assert_eq!(repeats.verdict("bash_output", &poll), Verdict::Run);
            repeats.finished("bash_output", &poll, &"line\n".repeat(n));
        }
        // Arguments compare as values: key order does not make a call different.
        let mut repeats = Repeats::default();
        repeats.finished("grep", &json!({"pattern": "x", "path": "."}), "none");
        repeats.finished("grep", &json!({"path": ".", "pattern": "x"}), "none");
        assert!(matches!(
            repeats.verdict("grep", &json!({"pattern": "x", "path": "."})),
            Verdict::Refuse(_)
        ));
    }

    #[test]
    fn after_the_warning_any_third_in_a_row_ends_the_turn() {
        let mut repeats = Repeats::default();
        let (a, b) = (json!({"n": 1}), json!({"n": 2}));
        repeats.finished("t", &a, "x");
        repeats.finished("t", &a, "x");
        assert!(matches!(repeats.verdict("t", &a), Verdict::Refuse(_)));
        repeats.finished("t", &b, "y");
        repeats.finished("t", &b, "y");
        assert_eq!(repeats.verdict("t", &b), Verdict::EndTurn);
    }
}
