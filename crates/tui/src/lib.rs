//! Seam role: consumer — dsh's interactive terminal, the third front end of the turn view
//! (`dsh-view`), beside `dsh run` and `dsh acp`. Its design is the RFC "The interactive
//! terminal" (`docs/rfc/proposed/feature/2026-12-06-interactive-terminal.md`).
//!
//! Built so far: the composer, the multi-line input editor with its prompt history and
//! collapsed pastes ([`Composer`]). Nothing runs it yet: `dsh` without a subcommand is not
//! wired to this crate, and nothing advertises it.
//!
//! # Invariants
//!
//! - The composer is pure state: every edit is a method, and what is sent is exactly what
//!   was typed or pasted, however a paste was shown.
//! - The composer always holds at least one line, and its cursor is always inside the text.
#![deny(missing_docs)]

mod composer;
mod history;

pub use composer::{Composer, Edit, Enter};
pub use history::History;
