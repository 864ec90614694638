//! The interactive `dsh` on a real pseudo-terminal, read through a terminal emulator as a
//! person's terminal would show it: a screen that is redrawn in place, a cursor, and the
//! answers a terminal gives (the cursor position report dsh asks for at start).

// A harness is an assertion: failing loudly is its job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{MasterPty, PtySize, native_pty_system};

use crate::Sandbox;

/// How long a wait for the screen lasts before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// What the reader thread keeps: the emulator, and whether dsh closed the terminal.
struct Shared {
    parser: vt100::Parser,
    /// Every byte received, for assertions on what was written raw.
    raw: Vec<u8>,
    closed: bool,
}

/// `dsh` on a pseudo-terminal, its screen emulated.
pub struct Tui {
    killer: Box<dyn portable_pty::ChildKiller + Send + Sync>,
    exited: std::sync::mpsc::Receiver<u32>,
    master: Box<dyn MasterPty + Send>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    /// The process id, for the census.
    pub pid: u32,
}

/// The terminal's answer to a cursor position request.
const DSR: &[u8] = b"\x1b[6n";

impl Tui {
    /// `dsh <args>` in the sandbox's work dir on a terminal `rows` × `cols`, with `env` set
    /// after the sandbox's (`TERM=xterm-256color` unless `env` says otherwise).
    pub fn start(
        sandbox: &Sandbox,
        args: &[&str],
        env: &[(&str, &str)],
        rows: u16,
        cols: u16,
    ) -> Tui {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut all = vec![("TERM", "xterm-256color")];
        all.extend_from_slice(env);
        let command = crate::pty::command(sandbox, args, &all);
        let mut child = pty.slave.spawn_command(command).unwrap();
        let pid = child.process_id().unwrap_or(0);
        let killer = child.clone_killer();
        let (exit_tx, exited) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            if let Ok(status) = child.wait() {
                let _ = exit_tx.send(status.exit_code());
            }
        });
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer: Arc<Mutex<Box<dyn Write + Send>>> =
            Arc::new(Mutex::new(pty.master.take_writer().unwrap()));
        let shared = Arc::new((
            Mutex::new(Shared {
                parser: vt100::Parser::new(rows, cols, 0),
                raw: Vec::new(),
                closed: false,
            }),
            Condvar::new(),
        ));
        let (feed, answer) = (shared.clone(), writer.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let (lock, wake) = &*feed;
                let mut shared = lock.lock().unwrap();
                shared.raw.extend_from_slice(&buf[..n]);
                // A cursor position request is answered where the emulator's cursor is once
                // everything before it was shown, as a terminal does.
                let mut rest = &buf[..n];
                while let Some(at) = rest.windows(DSR.len()).position(|w| w == DSR) {
                    shared.parser.process(&rest[..at]);
                    let (row, col) = shared.parser.screen().cursor_position();
                    let reply = format!("\x1b[{};{}R", row + 1, col + 1);
                    let _ = answer.lock().unwrap().write_all(reply.as_bytes());
                    rest = &rest[at + DSR.len()..];
                }
                shared.parser.process(rest);
                wake.notify_all();
            }
            let (lock, wake) = &*feed;
            lock.lock().unwrap().closed = true;
            wake.notify_all();
        });
        Tui {
            killer,
            exited,
            master: pty.master,
            writer,
            shared,
            pid,
        }
    }

    /// The screen as shown now, without trailing blanks.
    pub fn screen(&self) -> String {
        let shared = self.shared.0.lock().unwrap();
        shared.parser.screen().contents().trim_end().to_owned()
    }

    /// Every byte dsh wrote so far.
    pub fn raw(&self) -> Vec<u8> {
        self.shared.0.lock().unwrap().raw.clone()
    }

    /// Waits until the screen satisfies `done` (which sees its text); `what` names it when
    /// the wait fails.
    pub fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        let (lock, wake) = &*self.shared;
        let mut shared = lock.lock().unwrap();
        loop {
            let screen = shared.parser.screen().contents();
            if done(&screen) {
                return screen;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || shared.closed {
                panic!("the screen never showed {what}; it shows:\n{screen}");
            }
            shared = wake.wait_timeout(shared, left).unwrap().0;
        }
    }

    /// Waits until the screen shows `needle`.
    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_until(&format!("{needle:?}"), |s| s.contains(needle))
    }

    /// Types `keys` at the terminal.
    pub fn keys(&self, keys: &[u8]) {
        let mut writer = self.writer.lock().unwrap();
        writer.write_all(keys).unwrap();
        writer.flush().unwrap();
    }

    /// Types `text`, then Enter.
    pub fn line(&self, text: &str) {
        self.keys(text.as_bytes());
        self.keys(b"\r");
    }

    /// Pastes `text` as a terminal does with bracketed paste on.
    pub fn paste(&self, text: &str) {
        self.keys(format!("\x1b[200~{text}\x1b[201~").as_bytes());
    }

    /// Resizes the terminal (dsh gets SIGWINCH) and the emulator with it.
    pub fn resize(&self, rows: u16, cols: u16) {
        self.shared
            .0
            .lock()
            .unwrap()
            .parser
            .screen_mut()
            .set_size(rows, cols);
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
    }

    /// Where the cursor is: row, column.
    pub fn cursor(&self) -> (u16, u16) {
        self.shared
            .0
            .lock()
            .unwrap()
            .parser
            .screen()
            .cursor_position()
    }

    /// Waits for dsh to exit (30 s at most); its status and the last screen.
    pub fn exit(self) -> (u32, String) {
        let (code, screen, _) = self.exit_with_raw();
        (code, screen)
    }

    /// As [`Tui::exit`], with every byte dsh wrote, once the terminal was closed.
    pub fn exit_with_raw(mut self) -> (u32, String, Vec<u8>) {
        let Ok(code) = self.exited.recv_timeout(PATIENCE) else {
            let _ = self.killer.kill();
            panic!("dsh did not exit; the screen shows:\n{}", self.screen());
        };
        // The reader ends when the last holder of the terminal closed it.
        let (lock, wake) = &*self.shared;
        let mut shared = lock.lock().unwrap();
        let deadline = Instant::now() + PATIENCE;
        while !shared.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the terminal stayed open after dsh exited");
            shared = wake.wait_timeout(shared, left).unwrap().0;
        }
        let screen = shared.parser.screen().contents().trim_end().to_owned();
        (code, screen, shared.raw.clone())
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.killer.kill();
    }
}
