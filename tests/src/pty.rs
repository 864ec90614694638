//! `dsh` on a real pseudo-terminal, for the suites that check what a person sees.

// A harness is an assertion: failing loudly is its job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use crate::{Sandbox, binary};

/// `dsh` on a pseudo-terminal: what it writes, as the terminal receives it.
pub struct Terminal {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    output: mpsc::Receiver<Vec<u8>>,
    /// Everything received so far (lossy UTF-8).
    pub seen: String,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Terminal {
    /// `dsh <args>` in the sandbox's work dir on a 200-column terminal with `TERM=dumb`.
    pub fn run(sandbox: &Sandbox, args: &[&str]) -> Terminal {
        Terminal::run_with(sandbox, args, &[("TERM", "dumb")])
    }

    /// `dsh <args>` as [`Terminal::run`] starts it, with `env` set (after the sandbox's).
    pub fn run_with(sandbox: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        Terminal::run_sized(sandbox, args, env, 200)
    }

    /// As [`Terminal::run_with`], on a terminal `cols` columns wide.
    pub fn run_sized(
        sandbox: &Sandbox,
        args: &[&str],
        env: &[(&str, &str)],
        cols: u16,
    ) -> Terminal {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let command = command(sandbox, args, env);
        let child = pty.slave.spawn_command(command).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer = pty.master.take_writer().unwrap();
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    return;
                }
            }
        });
        Terminal {
            child,
            writer,
            output,
            seen: String::new(),
            _master: pty.master,
        }
    }

    /// Waits (30 s at most) until the terminal has shown `needle`.
    pub fn expect(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.seen.contains(needle) {
            match self
                .output
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(bytes) => self.seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => panic!("no {needle:?} on the terminal; saw:\n{}", self.seen),
            }
        }
    }

    /// Types `keys` at the terminal.
    pub fn type_keys(&mut self, keys: &[u8]) {
        self.writer.write_all(keys).unwrap();
        self.writer.flush().unwrap();
    }

    /// Takes what the terminal still holds once dsh exited: the reader ends when the last
    /// process holding the terminal closes it (the master then reads EIO), so this waits for
    /// that, not for a quiet spell. A process dsh left behind holding the terminal fails the
    /// test after 15 s.
    fn drain(output: &mpsc::Receiver<Vec<u8>>, seen: &mut String) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            match output.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(bytes) => seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("the terminal stayed open 15 s after dsh exited; saw:\n{seen}")
                }
            }
        }
    }

    /// Waits for dsh to exit; its status and everything the terminal received.
    pub fn exit_code(mut self) -> (u32, String) {
        let status = self.child.wait().unwrap();
        Terminal::drain(&self.output, &mut self.seen);
        (status.exit_code(), self.seen)
    }

    /// As [`Terminal::exit_code`], failing the test when dsh has not exited within `bound`:
    /// for promises such as "a second Ctrl-C quits at once".
    pub fn exit_within(mut self, bound: Duration) -> (u32, String) {
        let (tx, rx) = mpsc::channel();
        let mut child = self.child;
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let status = rx
            .recv_timeout(bound)
            .unwrap_or_else(|_| panic!("dsh did not exit within {bound:?}; saw:\n{}", self.seen))
            .unwrap();
        Terminal::drain(&self.output, &mut self.seen);
        (status.exit_code(), self.seen)
    }
}

/// What a person sees once `received` (the bytes a terminal `cols` wide received) is applied
/// by a terminal emulator: every line written, scrollback and screen alike, without trailing
/// blanks. A frame that was erased is gone from it; one left behind is there.
pub fn screen(received: &str, cols: u16) -> String {
    // Rows enough that nothing scrolls off: the lines are the whole transcript.
    let mut parser = vt100::Parser::new(2000, cols, 0);
    parser.process(
        received
            .replace('\n', "\r\n")
            .replace("\r\r\n", "\r\n")
            .as_bytes(),
    );
    let contents = parser.screen().contents();
    contents.trim_end().to_owned()
}

/// `dsh <args>` in the sandbox's work dir, with a clean environment, the sandbox's home and
/// data directory, then `env`.
pub fn command(sandbox: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> CommandBuilder {
    let mut command = CommandBuilder::new(binary());
    command.args(args);
    command.cwd(sandbox.work());
    command.env_clear();
    command.env("PATH", std::env::var("PATH").unwrap_or_default());
    command.env("HOME", sandbox.root.path().join("home"));
    command.env("DSH_DATA_DIR", sandbox.data());
    for (name, value) in env {
        command.env(name, value);
    }
    command
}
