//! The changed region of a file: what a diff card shows, kept in the result's `meta` so a
//! replay shows the same card without the whole file in the log twice.

use serde_json::{Value, json};

/// Lines of unchanged context kept around a change.
const CONTEXT: usize = 3;

/// The region of `old` and `new` that differs, with context: `(first_line, old, new)`.
pub(crate) fn changed(old: &str, new: &str) -> (usize, String, String) {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let start = prefix.saturating_sub(CONTEXT);
    let a_end = (a.len() - suffix + CONTEXT).min(a.len());
    let b_end = (b.len() - suffix + CONTEXT).min(b.len());
    (
        start + 1,
        a[start..a_end].concat(),
        b[start..b_end].concat(),
    )
}

/// The diff view of a change to `path`, as a question shows it before the change is made.
pub(crate) fn view(
    path: &std::path::Path,
    old: &str,
    new: &str,
    created: bool,
    summary: &str,
) -> dsh_tools::ToolResultView {
    let (first_line, old_text, new_text) = if created {
        (1, String::new(), new.to_owned())
    } else {
        changed(old, new)
    };
    dsh_tools::ToolResultView::Diff {
        path: path.to_path_buf(),
        old_text,
        new_text,
        first_line: u32::try_from(first_line).unwrap_or(u32::MAX),
        summary: summary.to_owned(),
    }
}

/// The `meta` of a change to `path`.
pub(crate) fn meta(path: &str, old: &str, new: &str, created: bool, summary: &str) -> Value {
    let (first_line, old_text, new_text) = if created {
        (1, String::new(), new.to_owned())
    } else {
        changed(old, new)
    };
    json!({
        "path": path,
        "first_line": first_line,
        "old_text": old_text,
        "new_text": new_text,
        "summary": summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_is_the_change_with_three_lines_around_it() {
        let old: String = (1..=10).map(|i| format!("{i}\n")).collect();
        let new = old.replace("5\n", "five\n");
        assert_eq!(
            changed(&old, &new),
            (
                2,
                "2\n3\n4\n5\n6\n7\n8\n".into(),
                "2\n3\n4\nfive\n6\n7\n8\n".into()
            )
        );
        // At the edges, and an insertion.
        assert_eq!(changed("a\n", "a\nb\n"), (1, "a\n".into(), "a\nb\n".into()));
        assert_eq!(changed("", "x"), (1, String::new(), "x".into()));
    }
}
