//! Counts in words, for what people read: `1 line`, `3 lines`, never `1 lines`.

/// `n` and the noun that fits it: `singular` for one, `plural` otherwise.
///
/// ```
/// use dsh_tools::words::count;
///
/// assert_eq!(count(1, "line", "lines"), "1 line");
/// assert_eq!(count(0, "match", "matches"), "0 matches");
/// ```
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}
