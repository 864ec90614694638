//! A foreground command's output while it runs: shown to the people watching as it arrives
//! (UTF-8 decoded across read boundaries), and kept — its head and its tail, within the
//! result's caps — so that a call cancelled before the command ends still tells the model
//! what the command had printed.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use dsh_shell::OutputSink;
use dsh_shell::text::decode_chunk;
use dsh_tools::ToolContext;
use parking_lot::Mutex;

/// What a running command printed so far.
pub(crate) struct Live {
    state: Mutex<State>,
    started: Instant,
}

struct State {
    /// Bytes of an incomplete character, waiting for the next read.
    pending: Vec<u8>,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl Live {
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> Arc<Live> {
        Arc::new(Live {
            state: Mutex::new(State {
                pending: Vec::new(),
                head: Vec::new(),
                tail: VecDeque::new(),
                head_cap,
                tail_cap,
                total: 0,
            }),
            started: Instant::now(),
        })
    }

    /// The executor's sink: keeps each piece and shows it through `cx`'s progress.
    pub(crate) fn sink(self: &Arc<Live>, cx: &ToolContext) -> OutputSink {
        let live = self.clone();
        let cx = cx.clone();
        Arc::new(move |bytes: &[u8]| {
            let text = live.take(bytes);
            cx.progress(&text);
        })
    }

    /// Keeps `bytes` and returns the text they complete.
    fn take(&self, bytes: &[u8]) -> String {
        let mut state = self.state.lock();
        state.total += bytes.len() as u64;
        let room = state.head_cap.saturating_sub(state.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        state.head.extend_from_slice(to_head);
        for &byte in rest {
            if state.tail.len() == state.tail_cap {
                state.tail.pop_front();
            }
            if state.tail_cap > 0 {
                state.tail.push_back(byte);
            }
        }
        let mut stream = std::mem::take(&mut state.pending);
        stream.extend_from_slice(bytes);
        let decoded = decode_chunk(&stream, true, true);
        state.pending = stream[stream.len() - decoded.held_back..].to_vec();
        decoded.text
    }

    /// The result of a call cancelled while the command ran: what it printed (its head and
    /// tail when it printed more than both hold) and what ended it.
    pub(crate) fn cancelled(&self) -> String {
        let state = self.state.lock();
        let head = decode_chunk(&state.head, true, false).text;
        let tail: Vec<u8> = state.tail.iter().copied().collect();
        let kept = state.head.len() as u64 + tail.len() as u64;
        let mut out = head;
        if state.total > kept {
            out.push_str(&format!("\n[… {} bytes not kept …]\n", state.total - kept));
        }
        out.push_str(&decode_chunk(&tail, state.total <= kept, false).text);
        if out.is_empty() {
            out.push_str(crate::render::NO_OUTPUT);
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "[cancelled by the user after {:.1} s; the command was stopped]",
            self.started.elapsed().as_secs_f64()
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_split_across_reads_is_shown_once_whole() {
        let live = Live::new(64, 64);
        let e = "é".as_bytes();
        assert_eq!(live.take(&[b'a', e[0]]), "a");
        assert_eq!(live.take(&[e[1], b'b']), "éb");
    }

    #[test]
    fn a_cancelled_call_keeps_the_head_and_the_tail() {
        let live = Live::new(4, 4);
        live.take(b"0123456789");
        let text = live.cancelled();
        assert!(
            text.starts_with("0123\n[… 2 bytes not kept …]\n6789\n"),
            "{text}"
        );
        assert!(text.contains("[cancelled by the user after "), "{text}");
        let quiet = Live::new(4, 4);
        assert!(quiet.cancelled().starts_with("(no output)\n[cancelled"));
    }
}
