//! Seam role: support — the light test fixtures shared by the workspace: log capture, the SSE
//! fixtures, session logs stored by earlier versions, process census helpers for tests that
//! check what a command left running, real directory trees (files, git repositories), a real
//! PostgreSQL (the one CI starts, or a private cluster), and a live-bytes allocator for
//! benchmarks. It names no provider and builds no HTTP stack, so any crate's tests can use it; what runs real providers (the mock model server, the
//! persistence contract suite, the providers themselves) is `dsh-test-providers`. The ACP
//! driver, which needs the built binary, lives with the end-to-end suites in `tests/`.
//!
//! Fixtures here panic on failure: they are assertions, and a panic is how a test reports.
#![deny(missing_docs)]
// Fixtures are assertions: failing loudly is their job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod heap;
pub mod logs;
pub mod postgres;
pub mod processes;
pub mod sse;
pub mod stored;
pub mod tree;
