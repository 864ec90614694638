//! Seam role: support — test fixtures shared by the workspace: the mock model server, replay
//! scripts, the persistence contract suite and the ACP test driver.
//!
//! The one non-root crate allowed to name providers, so that a crate's own tests reach providers
//! only through it (architecture invariant 4).
//!
//! Status: not implemented yet. Each issue that needs a fixture adds it here; until then this
//! crate exports nothing.
#![deny(missing_docs)]
