//! The signals a front end stops on, listened for once: `dsh run` and `dsh acp` both end on
//! SIGINT, SIGTERM and SIGHUP, and decide for themselves what each means (a run cancels its
//! turn on the first Ctrl-C; the bridge tears down on any of them).

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::exit::{self, Failure};

/// Which signal arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quit {
    Interrupt,
    Terminate,
    Hangup,
}

impl Quit {
    /// The signal's name, for logs.
    pub fn name(self) -> &'static str {
        match self {
            Quit::Interrupt => "SIGINT",
            Quit::Terminate => "SIGTERM",
            Quit::Hangup => "SIGHUP",
        }
    }

    /// The exit status of a process that quits on this signal (128 + its number).
    pub fn status(self) -> u8 {
        match self {
            Quit::Interrupt => exit::INTERRUPTED,
            Quit::Terminate => exit::TERMINATED,
            Quit::Hangup => exit::HANGUP,
        }
    }
}

/// Listening for the three signals.
pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    /// Starts listening; from here on the signals no longer kill the process.
    pub fn new() -> Result<Signals, Failure> {
        let listen = |kind: SignalKind| {
            signal(kind).map_err(|e| Failure::internal(format!("cannot listen for signals: {e}")))
        };
        Ok(Signals {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
            hangup: listen(SignalKind::hangup())?,
        })
    }

    /// The next signal.
    pub async fn next(&mut self) -> Quit {
        tokio::select! {
            _ = self.interrupt.recv() => Quit::Interrupt,
            _ = self.terminate.recv() => Quit::Terminate,
            _ = self.hangup.recv() => Quit::Hangup,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_signal_exits_with_128_plus_its_number() {
        assert_eq!(Quit::Interrupt.status(), 130);
        assert_eq!(Quit::Terminate.status(), 143);
        assert_eq!(Quit::Hangup.status(), 129);
        assert_eq!(Quit::Hangup.name(), "SIGHUP");
    }
}
