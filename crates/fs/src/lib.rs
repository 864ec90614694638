//! Seam role: definition (layer 1) — files: the [`FileAccess`] trait through which tools read
//! and write text files, the [`Version`] stamp that makes a write refuse a file changed since
//! it was read, the path rules of a session's [`Roots`], and the typed [`FsError`]s.
//!
//! Two kinds of provider implement it: the local disk (`dsh-fs-local`, the kernel's service)
//! and an editor's file access (the ACP bridge's, over `fs/read_text_file` and
//! `fs/write_text_file`), which the front end attaches to the agent it creates so that edits
//! land in the editor's buffers. A tool gets whichever the caller has from its `ToolContext`
//! and never names either.
//!
//! # Invariants
//!
//! - A [`Version`] is a function of the text as read (its SHA-256): two reads of unchanged
//!   content have the same version, whichever provider made them.
//! - A write with an expected version writes only if the file still has that version, and a
//!   write that creates expects the file to be absent; otherwise it fails [`FsError::Stale`]
//!   and changes nothing. Every provider decides this with [`check_expected`].
//! - Paths given to a [`FileAccess`] are absolute; [`Roots::resolve`] makes them so.
//! - Being outside the roots never makes a read or write fail by itself: it is a fact the
//!   permission gate weighs ([`Resolved::inside`]).
//!
//! # Example
//!
//! ```
//! use dsh_fs::{Roots, Version};
//!
//! let roots = Roots::new("/work/project", Vec::new());
//! let inside = roots.resolve("src/main.rs").unwrap();
//! assert_eq!(inside.path, std::path::Path::new("/work/project/src/main.rs"));
//! assert!(inside.inside);
//! assert!(!roots.resolve("../other/secret").unwrap().inside);
//! assert_eq!(Version::of("a"), Version::of("a"));
//! ```
#![deny(missing_docs)]

mod access;
mod error;
mod roots;
mod stale;
mod version;

pub use access::{FileAccess, TextFile};
pub use error::FsError;
pub use roots::{Resolved, Roots};
pub use stale::check_expected;
pub use version::Version;
