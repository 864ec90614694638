//! Tool result codes: the machine-readable `error_code` of a failed `tool/result`. Tools define
//! their own; these are the ones the agent loop writes itself.

/// The name is not in the step's tool set.
pub const UNKNOWN_TOOL: &str = "unknown_tool";
/// The arguments are not JSON.
pub const INVALID_ARGUMENTS: &str = "invalid_arguments";
/// The approval gate rejected the call.
pub const TOOL_REJECTED: &str = "tool_rejected";
/// The body panicked.
pub const TOOL_PANICKED: &str = "tool_panicked";
/// The result exceeded the session's event size limit.
pub const OUTPUT_TOO_LARGE: &str = "output_too_large";
/// The step already ran as many calls as one step may; this one did not run.
pub const TOO_MANY_CALLS: &str = "too_many_calls";
/// The same call with the same arguments, a third time in a row; it did not run.
pub const REPEATED_CALL: &str = "repeated_call";
/// The user cancelled the call while it ran, and the tool stopped: the code every tool that
/// watches its cancellation gives such a call, so a front end can say so in the tool's words.
pub const CANCELLED: &str = "cancelled";
/// The body never started (cancel, barrier failure, approval cancelled), and a call crash
/// repair found unstarted: one code, defined with crash repair.
pub use dsh_session::repair::TOOL_NOT_STARTED;
/// The body was still running after the cancel grace and was aborted, and a call crash repair
/// found started: one code, defined with crash repair.
pub use dsh_session::repair::TOOL_OUTCOME_UNKNOWN;

/// True for a lowercase snake_case code: `[a-z][a-z0-9_]*`, at most 64 bytes, no doubled,
/// leading or trailing underscore.
pub fn is_result_code(code: &str) -> bool {
    let bytes = code.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
        && !code.ends_with('_')
        && !code.contains("__")
}
