//! Result texts: the status phrase every text shares, the foreground result with its
//! truncation notice, and one `bash_output` read. Bytes become text only here, through the
//! seam's one lossy decoder. No duration or other varying value appears, so results are
//! replay-stable.

use dsh_shell::text::decode_chunk;
use dsh_shell::{EndCause, ExitInfo, KillCause, OutputChunk, Spill, SpillStop, TaskId, TaskState};

/// What a foreground result says when the command printed nothing.
pub const NO_OUTPUT: &str = "(no output)";

/// The note a foreground result carries when processes it left were terminated.
pub const STRAGGLER_NOTE: &str = "[note: processes this command left running were terminated; use run_in_background for long-running processes]";

/// `exit code: 3`, `timed out after 100 ms; killed by signal: SIGTERM`, …
pub fn exit_phrase(exit: &ExitInfo) -> String {
    let prefix = match &exit.end {
        EndCause::Exited => String::new(),
        EndCause::TimedOut { after } => format!("timed out after {} ms; ", after.as_millis()),
        EndCause::Killed(KillCause::Requested) => "killed on request; ".to_owned(),
        EndCause::Killed(KillCause::Disposed) => "shell executor shut down; ".to_owned(),
        EndCause::Killed(KillCause::Cancelled) => "cancelled; ".to_owned(),
    };
    let base = match (&exit.code, &exit.signal) {
        (_, Some(signal)) => format!("killed by signal: {}", signal.name),
        (Some(code), None) => format!("exit code: {code}"),
        (None, None) => "exit code: unknown".to_owned(),
    };
    prefix + &base
}

pub fn state_phrase(state: &TaskState) -> String {
    match state {
        TaskState::Running => "running".to_owned(),
        TaskState::Terminating(_) => "terminating".to_owned(),
        TaskState::Finished(exit) => exit_phrase(exit),
    }
}

fn push_line(out: &mut String, line: &str) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(line);
}

/// The foreground result for a complete stream.
pub fn foreground_whole(bytes: &[u8], exit: &ExitInfo) -> String {
    let mut out = decode_chunk(bytes, true, false).text;
    if out.is_empty() {
        out.push_str(NO_OUTPUT);
    }
    finish_foreground(out, exit)
}

fn finish_foreground(mut out: String, exit: &ExitInfo) -> String {
    if exit.stragglers_terminated {
        push_line(&mut out, STRAGGLER_NOTE);
    }
    push_line(&mut out, &format!("[{}]", exit_phrase(exit)));
    out
}

/// A truncated stream: the head, the notice, the tail. `head` starts at offset 0; `tail`
/// starts at `tail_start`; the caller made sure they do not meet.
pub fn foreground_cut(
    id: TaskId,
    head: &[u8],
    tail: &[u8],
    tail_start: u64,
    exit: &ExitInfo,
) -> String {
    let head_bytes = head.len();
    let head = decode_chunk(head, true, true);
    let tail_decoded = decode_chunk(tail, tail_start == 0, false);
    let total = exit.output.total_bytes;
    let a = (head_bytes - head.held_back) as u64;
    let b = tail_start + tail_decoded.skipped_leading as u64;
    let omitted = b.saturating_sub(a);
    let (kept, readable_to) = match &exit.output.spill {
        Spill::Complete { bytes } => (
            format!("The full output is kept in a spill file ({bytes} bytes)."),
            *bytes,
        ),
        Spill::Partial { bytes, stop } => (
            format!(
                "The spill file holds only the first {bytes} bytes ({}); bytes {bytes}..{b} are lost.",
                match stop {
                    SpillStop::CapReached => "size limit reached",
                    SpillStop::WriteFailed => "write failed",
                }
            ),
            *bytes,
        ),
        Spill::None => (format!("The omitted bytes {a}..{b} were not kept."), 0),
    };
    let mut notice = format!(
        "[output truncated: {omitted} bytes omitted between offsets {a} and {b} of {total}. {kept}"
    );
    if readable_to > a {
        notice.push_str(&format!(
            " Read them with bash_output task_id=\"{id}\" offset={a}"
        ));
    }
    notice.push(']');
    let mut out = String::new();
    if !head.text.is_empty() {
        out.push_str(&head.text);
    }
    push_line(&mut out, &notice);
    push_line(&mut out, &tail_decoded.text);
    finish_foreground(out, exit)
}

/// One `bash_output` read.
pub fn output_read(chunk: &OutputChunk, status: &str) -> String {
    let complete = chunk.exit.is_some() && chunk.next == chunk.total;
    let decoded = decode_chunk(&chunk.bytes, chunk.start == 0, !complete);
    let start = chunk.start + decoded.skipped_leading as u64;
    let next = chunk.next - decoded.held_back as u64;
    let mut out = String::new();
    if chunk.skipped > 0 {
        out.push_str(&format!(
            "[{} bytes before offset {start} are no longer available]",
            chunk.skipped
        ));
    }
    push_line(
        &mut out,
        if decoded.text.is_empty() {
            "(no new output)"
        } else {
            &decoded.text
        },
    );
    let mut range = format!("[bytes {start}..{next} of {}", chunk.total);
    if next < chunk.total {
        range.push_str(&format!("; more output from offset {next}"));
    }
    range.push(']');
    push_line(&mut out, &range);
    push_line(&mut out, &format!("[status: {status}]"));
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use dsh_shell::{EndCause, ExitInfo, OutputStats, Spill, SpillStop, TaskId};

    use super::foreground_cut;

    fn exit(total: u64, spill: Spill) -> ExitInfo {
        ExitInfo {
            code: Some(0),
            signal: None,
            end: EndCause::Exited,
            duration: Duration::ZERO,
            stragglers_terminated: false,
            output: OutputStats {
                total_bytes: total,
                truncated: true,
                spill,
            },
        }
    }

    #[test]
    fn without_a_readable_head_the_notice_comes_first_and_offers_no_read() {
        let id: TaskId = "sh-k3f9-7".parse().unwrap();
        let spill = Spill::Partial {
            bytes: 0,
            stop: SpillStop::WriteFailed,
        };
        let text = foreground_cut(id, b"", b"tail\n", 95, &exit(100, spill));
        assert_eq!(
            text,
            "[output truncated: 95 bytes omitted between offsets 0 and 95 of 100. The spill file holds only the first 0 bytes (write failed); bytes 0..95 are lost.]\ntail\n[exit code: 0]"
        );
    }

    #[test]
    fn a_head_without_a_final_newline_gets_one_before_the_notice() {
        let id: TaskId = "sh-k3f9-8".parse().unwrap();
        let text = foreground_cut(
            id,
            b"head",
            b"end",
            97,
            &exit(100, Spill::Complete { bytes: 100 }),
        );
        assert_eq!(
            text,
            "head\n[output truncated: 93 bytes omitted between offsets 4 and 97 of 100. The full output is kept in a spill file (100 bytes). Read them with bash_output task_id=\"sh-k3f9-8\" offset=4]\nend\n[exit code: 0]"
        );
    }
}
