//! The one lossy decoder consumers use to show a task's bytes as text.
//!
//! Reads are cut at arbitrary byte offsets, which can split a UTF-8 character. Decoding each
//! chunk on its own would show a replacement character at every such cut; this decoder skips
//! the tail of a character begun before the chunk and holds back a character the chunk leaves
//! incomplete, so consecutive renderings join without spurious replacements.

/// A chunk rendered as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The text, with U+FFFD for bytes that are not UTF-8.
    pub text: String,
    /// Leading continuation bytes skipped (the end of a character that began earlier).
    pub skipped_leading: usize,
    /// Trailing bytes of an incomplete character, left for the next read. A consumer advances
    /// its next offset by `bytes.len() - held_back`.
    pub held_back: usize,
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// How long a UTF-8 sequence starting with `lead` is, if `lead` can start one.
fn sequence_len(lead: u8) -> Option<usize> {
    match lead {
        0x00..=0x7F => Some(1),
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

/// Decodes `bytes`. `at_stream_start`: the chunk begins at offset 0, so nothing before it can
/// own its leading bytes. `more_may_follow`: the stream may continue after the chunk.
pub fn decode_chunk(bytes: &[u8], at_stream_start: bool, more_may_follow: bool) -> Decoded {
    let skipped_leading = if at_stream_start {
        0
    } else {
        bytes
            .iter()
            .take(3)
            .take_while(|b| is_continuation(**b))
            .count()
    };
    let body = &bytes[skipped_leading..];
    let held_back = if more_may_follow {
        incomplete_suffix(body)
    } else {
        0
    };
    let text = String::from_utf8_lossy(&body[..body.len() - held_back]).into_owned();
    Decoded {
        text,
        skipped_leading,
        held_back,
    }
}

/// The length of a trailing valid-but-incomplete UTF-8 prefix (0 to 3 bytes).
fn incomplete_suffix(bytes: &[u8]) -> usize {
    for back in 1..=3.min(bytes.len()) {
        let at = bytes.len() - back;
        let byte = bytes[at];
        if is_continuation(byte) {
            continue;
        }
        return match sequence_len(byte) {
            Some(need) if need > back && valid_prefix(&bytes[at..]) => back,
            _ => 0,
        };
    }
    0
}

/// True when `prefix` (a lead byte and continuations) can still become a valid character:
/// the second byte respects the lead's narrower ranges (no overlong or surrogate forms).
fn valid_prefix(prefix: &[u8]) -> bool {
    match (prefix.first(), prefix.get(1)) {
        (Some(0xE0), Some(b)) => (0xA0..=0xBF).contains(b),
        (Some(0xED), Some(b)) => (0x80..=0x9F).contains(b),
        (Some(0xF0), Some(b)) => (0x90..=0xBF).contains(b),
        (Some(0xF4), Some(b)) => (0x80..=0x8F).contains(b),
        _ => prefix[1..].iter().all(|b| is_continuation(*b)),
    }
}
