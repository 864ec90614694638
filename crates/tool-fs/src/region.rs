//! The changed region of a file: what a diff card shows, kept in the result's `meta` so a
//! replay shows the same card without the whole file in the log twice.

use std::path::Path;

use dsh_tools::ToolResultView;
use serde_json::{Value, json};

/// Lines of unchanged context kept around a change.
const CONTEXT: usize = 3;

/// The part of a file a change touched, before and after, with context around it.
pub(crate) struct Region {
    /// The 1-based line the region starts at.
    pub first_line: usize,
    /// The file did not exist before.
    pub created: bool,
    pub old_text: String,
    pub new_text: String,
}

impl Region {
    /// The region of `old` becoming `new`; a created file is all new.
    pub(crate) fn of(old: &str, new: &str, created: bool) -> Region {
        if created {
            return Region {
                first_line: 1,
                created: true,
                old_text: String::new(),
                new_text: new.to_owned(),
            };
        }
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
        Region {
            first_line: start + 1,
            created: false,
            old_text: a[start..a_end].concat(),
            new_text: b[start..b_end].concat(),
        }
    }

    /// The result's `meta` for a change to `path`.
    pub(crate) fn meta(&self, path: &Path, summary: &str) -> Value {
        json!({
            "path": path.display().to_string(),
            "first_line": self.first_line,
            "created": self.created,
            "old_text": self.old_text,
            "new_text": self.new_text,
            "summary": summary,
        })
    }

    /// The diff view a question shows before the change is made.
    pub(crate) fn view(self, path: &Path, summary: &str) -> ToolResultView {
        ToolResultView::Diff {
            path: path.to_path_buf(),
            old_text: self.old_text,
            new_text: self.new_text,
            first_line: u32::try_from(self.first_line).unwrap_or(u32::MAX),
            created: self.created,
            summary: summary.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(r: Region) -> (usize, String, String) {
        (r.first_line, r.old_text, r.new_text)
    }

    #[test]
    fn the_region_is_the_change_with_three_lines_around_it() {
        let old: String = (1..=10).map(|i| format!("{i}\n")).collect();
        let new = old.replace("5\n", "five\n");
        assert_eq!(
            parts(Region::of(&old, &new, false)),
            (
                2,
                "2\n3\n4\n5\n6\n7\n8\n".into(),
                "2\n3\n4\nfive\n6\n7\n8\n".into()
            )
        );
        // At the edges, an insertion, and a creation.
        assert_eq!(
            parts(Region::of("a\n", "a\nb\n", false)),
            (1, "a\n".into(), "a\nb\n".into())
        );
        assert_eq!(
            parts(Region::of("", "x", false)),
            (1, String::new(), "x".into())
        );
        assert_eq!(
            parts(Region::of("old", "x", true)),
            (1, String::new(), "x".into())
        );
    }
}
