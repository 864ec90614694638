//! Seam role: consumer — dsh's interactive terminal, the third front end of the turn view
//! (`dsh-view`), beside `dsh run` and `dsh acp`. Its design is the RFC "The interactive
//! terminal" (`docs/rfc/proposed/feature/2026-12-06-interactive-terminal.md`).
//!
//! Built so far: the composer, the multi-line input editor with its prompt history and
//! collapsed pastes ([`Composer`]); the transcript, which maps view events to the lines the
//! terminal's scrollback keeps and the live part the viewport redraws ([`Transcript`]), with
//! the model's Markdown ([`Markdown`]); the status line ([`Status`]). Nothing runs it yet: `dsh` without a subcommand is
//! not wired to this crate, and nothing advertises it.
//!
//! # Invariants
//!
//! - The composer is pure state: every edit is a method, and what is sent is exactly what
//!   was typed or pasted, however a paste was shown.
//! - The composer always holds at least one line, and its cursor is always inside the text.
//! - A line given to the scrollback never changes; whatever may still change (an unfinished
//!   line, a running call) stays live.
//! - Every string the transcript shows is safe: the view's own, or a raw field filtered.
#![deny(missing_docs)]

mod composer;
mod history;
mod markdown;
mod status;
mod transcript;

pub use composer::{Composer, Edit, Enter};
pub use history::History;
pub use markdown::Markdown;
pub use status::Status;
pub use transcript::{Palette, Transcript};
