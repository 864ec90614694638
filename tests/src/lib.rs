//! Seam role: support — the workspace end-to-end suites: they drive the built `dsh` binary over
//! stdio, with real bash processes, real files in temporary directories, a real HTTP server
//! speaking the model wire format and an official ACP client as the peer.
//!
//! Status: empty until the binary has commands to drive; the suites arrive with the
//! command-line and ACP issues. No test here pretends to cover what does not exist yet.
#![deny(missing_docs)]
