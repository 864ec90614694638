//! A stored session as the `/resume` picker lists it: its title, how long ago it was used,
//! and its size.

use dsh_session::SessionSummary;
use dsh_tools::safe_text::SafeText;

use crate::menu::Entry;

/// The picker's entry for `listed`: chosen by its id, shown by its title.
pub fn entry(listed: SessionSummary) -> Entry {
    let id = listed.header.id.to_string();
    let title = listed
        .title
        .as_deref()
        .map(|t| SafeText::plain(t.lines().next().unwrap_or_default()))
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| "(untitled)".to_owned());
    let title: String = title.chars().take(60).collect();
    let size = listed
        .location
        .path
        .as_deref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or_else(String::new, |m| format!(" · {}", bytes(m.len())));
    let short: String = id.chars().take(8).collect();
    Entry {
        value: id,
        label: title,
        note: format!("{} · {short}{size}", age(now_ms() - listed.updated_at)),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `ms` as the largest whole unit: `3 min ago`, `2 h ago`, `5 d ago`.
fn age(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    match secs {
        0..60 => "just now".to_owned(),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

/// A size in bytes, KiB or MiB.
fn bytes(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{} KiB", n / 1024),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_sizes_read_at_a_glance() {
        assert_eq!(age(5_000), "just now");
        assert_eq!(age(180_000), "3 min ago");
        assert_eq!(age(3 * 86_400_000), "3 d ago");
        assert_eq!(bytes(2048), "2 KiB");
        assert_eq!(bytes(3 * 1_048_576), "3.0 MiB");
    }
}
