//! A list to choose from, filtered as the user types: the slash command menu, the `@` path
//! completions and the pickers (`/model`, `/reasoning`, `/mode`, `/resume`) are each one.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// How many entries a menu shows at once.
pub const SHOWN: usize = 8;

/// One entry: what is chosen, and a line that says what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// What choosing it gives (a command's name, a model, a path, a session id).
    pub value: String,
    /// What the list shows for it.
    pub label: String,
    /// A description, dimmed after the label (safe text).
    pub note: String,
}

impl Entry {
    /// An entry shown as its value.
    pub fn plain(value: impl Into<String>, note: impl Into<String>) -> Entry {
        let value = value.into();
        Entry {
            label: value.clone(),
            value,
            note: note.into(),
        }
    }
}

/// A filtered list and the entry highlighted in it.
#[derive(Clone, Debug, Default)]
pub struct Menu {
    entries: Vec<Entry>,
    filter: String,
    /// Indexes of the entries the filter keeps, in order.
    kept: Vec<usize>,
    selected: usize,
}

impl Menu {
    /// A menu of `entries`, unfiltered.
    pub fn new(entries: Vec<Entry>) -> Menu {
        let mut menu = Menu {
            entries,
            ..Menu::default()
        };
        menu.refilter();
        menu
    }

    /// Keeps the entries whose label contains `filter` (ignoring case): the one it names
    /// exactly first, then labels that start with it, then the rest.
    pub fn filter(&mut self, filter: &str) {
        if self.filter != filter {
            filter.clone_into(&mut self.filter);
            self.refilter();
        }
    }

    /// The filter typed so far.
    pub fn filter_text(&self) -> &str {
        &self.filter
    }

    fn refilter(&mut self) {
        let filter = self.filter.to_lowercase();
        let mut starting = Vec::new();
        let mut containing = Vec::new();
        for (i, entry) in self.entries.iter().enumerate() {
            let label = entry.label.to_lowercase();
            if label == filter {
                starting.insert(0, i);
            } else if label.starts_with(&filter) {
                starting.push(i);
            } else if label.contains(&filter) {
                containing.push(i);
            }
        }
        starting.extend(containing);
        self.kept = starting;
        self.selected = 0;
    }

    /// Whether the filter keeps nothing.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Moves the highlight up, wrapping.
    pub fn up(&mut self) {
        if !self.kept.is_empty() {
            self.selected = (self.selected + self.kept.len() - 1) % self.kept.len();
        }
    }

    /// Moves the highlight down, wrapping.
    pub fn down(&mut self) {
        if !self.kept.is_empty() {
            self.selected = (self.selected + 1) % self.kept.len();
        }
    }

    /// The highlighted entry.
    pub fn selected(&self) -> Option<&Entry> {
        self.kept.get(self.selected).map(|&i| &self.entries[i])
    }

    /// The lines shown: a window of the kept entries around the highlight.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let first = self.selected.saturating_sub(SHOWN - 1);
        let widest = self
            .kept
            .iter()
            .map(|&i| self.entries[i].label.chars().count())
            .max()
            .unwrap_or(0)
            .min(usize::from(width) / 2);
        self.kept
            .iter()
            .enumerate()
            .skip(first)
            .take(SHOWN)
            .map(|(at, &i)| {
                let entry = &self.entries[i];
                let style = match at == self.selected {
                    true => Style::new().add_modifier(Modifier::REVERSED),
                    false => Style::new(),
                };
                let label: String = entry.label.chars().take(widest.max(1)).collect();
                Line::from(vec![
                    Span::styled(format!("  {label:<widest$}"), style),
                    Span::styled(
                        format!("  {}", entry.note),
                        Style::new().add_modifier(Modifier::DIM),
                    ),
                ])
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_puts_prefixes_first_and_the_highlight_wraps() {
        let mut menu = Menu::new(
            ["model", "mode", "compact", "new", "resume"]
                .map(|n| Entry::plain(n, ""))
                .to_vec(),
        );
        menu.filter("mo");
        let kept: Vec<_> = menu.kept.iter().map(|&i| &menu.entries[i].value).collect();
        assert_eq!(kept, ["model", "mode"]);
        menu.up();
        assert_eq!(menu.selected().unwrap().value, "mode");
        menu.filter("m");
        let kept: Vec<_> = menu.kept.iter().map(|&i| &menu.entries[i].value).collect();
        assert_eq!(
            kept,
            ["model", "mode", "compact", "resume"],
            "prefixes first"
        );
        menu.filter("mode");
        assert_eq!(
            menu.selected().unwrap().value,
            "mode",
            "the exact name first"
        );
        menu.filter("zz");
        assert!(menu.is_empty() && menu.selected().is_none());
    }
}
