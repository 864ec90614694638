//! Seam role: consumer of `dsh_shell::ShellExecutor` — the `bash`, `bash_output` and `bash_kill`
//! tools.
//!
//! Stamps the calling agent's id as the owner of each task and decides access by comparing
//! tokens. It keeps no task table, so reloading this plugin changes no ownership (the brief's
//! reload invariant). It never names a shell provider.
//!
//! Status: not implemented yet. A later issue fills this crate; until then it exports nothing.
#![deny(missing_docs)]
