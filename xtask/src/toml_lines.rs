//! Where a key is declared in TOML text, so a diagnostic points at the line a reader has to
//! change. The text is parsed once with `toml_edit`, which keeps every key's byte span, so
//! every spelling TOML allows — `[a.b]` headers, dotted keys, inline tables, quoted keys —
//! is found the same way.

use std::ops::Range;

use toml_edit::{ImDocument, Item, TableLike};

use crate::md::Lines;

/// A parsed TOML document and its line map.
pub struct TomlLines<'a> {
    doc: ImDocument<&'a str>,
    lines: Lines,
}

impl<'a> TomlLines<'a> {
    /// Parses `text`; `None` when it is not TOML (the caller has reported that already, or
    /// cargo has).
    pub fn parse(text: &'a str) -> Option<TomlLines<'a>> {
        Some(TomlLines {
            doc: ImDocument::parse(text).ok()?,
            lines: Lines::new(text),
        })
    }

    /// The 1-based line declaring the key at `path` (each element one key, so a key with a
    /// dot in it is one element).
    pub fn line(&self, path: &[&str]) -> Option<u32> {
        let (last, parents) = path.split_last()?;
        let mut table: &dyn TableLike = self.doc.as_table();
        for key in parents {
            table = table.get(key).and_then(Item::as_table_like)?;
        }
        let (key, _) = table.get_key_value(last)?;
        self.at(key.span())
    }

    /// Every table at `path` whose name matches, with its own name: `["target", "*"]` gives
    /// each `[target.<cfg>]` table.
    pub fn tables(&self, path: &[&str]) -> Vec<(Vec<String>, &dyn TableLike)> {
        let mut found: Vec<(Vec<String>, &dyn TableLike)> = vec![(Vec::new(), self.doc.as_table())];
        for step in path {
            found = found
                .into_iter()
                .flat_map(|(name, table)| {
                    table
                        .iter()
                        .filter(|(key, _)| *step == "*" || key == step)
                        .filter_map(|(key, item)| {
                            let mut name = name.clone();
                            name.push(key.to_owned());
                            item.as_table_like().map(|t| (name, t))
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
        }
        found
    }

    /// The line of `key` in `table`, a table this document returned.
    pub fn key_line(&self, table: &dyn TableLike, key: &str) -> Option<u32> {
        let (key, _) = table.get_key_value(key)?;
        self.at(key.span())
    }

    fn at(&self, span: Option<Range<usize>>) -> Option<u32> {
        span.map(|span| self.lines.line(span.start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_in_every_spelling() {
        let text = "[workspace]\n\n[workspace.metadata.dsh.roles]\ndsh-a = { role = \"root\" }\n\"dsh-b\" = { role = \"support\" }\n\n[workspace.metadata.dsh.roles.dsh-c]\nrole = \"provider\"\n\n[ceilings]\n\"notes/a.md\" = 10\n";
        let toml = TomlLines::parse(text).unwrap();
        let roles = ["workspace", "metadata", "dsh", "roles"];
        for (package, line) in [("dsh-a", 4), ("dsh-b", 5), ("dsh-c", 7)] {
            let path: Vec<&str> = roles.iter().copied().chain([package]).collect();
            assert_eq!(toml.line(&path), Some(line), "{package}");
        }
        assert_eq!(toml.line(&["ceilings", "notes/a.md"]), Some(11));
        assert_eq!(toml.line(&["ceilings", "absent"]), None);
        assert!(TomlLines::parse("not = [toml").is_none());
    }
}
