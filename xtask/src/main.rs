//! Seam role: support — the `xtask` binary, a thin front end over the `xtask` library
//! (`cargo xtask <command>`, aliased in `.cargo/config.toml`).

fn main() -> std::process::ExitCode {
    xtask::run(std::env::args_os())
}
