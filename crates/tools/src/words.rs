//! Counts in words, for what people read: `1 line`, `3 lines`, never `1 lines`; `12.3k`
//! tokens.

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

/// `n` tokens the way people read them: `950`, `12.3k`, `1.2M`.
///
/// ```
/// use dsh_tools::words::tokens;
///
/// assert_eq!(tokens(950), "950");
/// assert_eq!(tokens(12_345), "12.3k");
/// assert_eq!(tokens(1_000_000), "1M");
/// ```
pub fn tokens(n: u64) -> String {
    let trim = |number: String| {
        number
            .strip_suffix(".0")
            .map(str::to_owned)
            .unwrap_or(number)
    };
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => trim(format!("{:.1}", n as f64 / 1_000.0)) + "k",
        _ => trim(format!("{:.1}", n as f64 / 1_000_000.0)) + "M",
    }
}
