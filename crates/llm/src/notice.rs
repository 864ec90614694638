//! What a provider tells the people waiting while it retries: a [`RetryNotice`] on the
//! kernel's event bus, which front ends turn into a status line (`dsh run`) or leave to the
//! final error (`dsh acp` without a client that shows notices).

use std::time::Duration;

/// A model request failed before anything was streamed and will be sent again.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryNotice {
    /// The session the request was for ([`crate::ModelRequest::session_id`]).
    pub session_id: Option<String>,
    /// Why the attempt failed, in words: `server busy (HTTP 429)`,
    /// `connection refused by 127.0.0.1:8765`.
    pub reason: String,
    /// The retry about to be made, from 1.
    pub retry: u32,
    /// The most retries that will be made.
    pub max_retries: u32,
    /// How long until it is made.
    pub delay: Duration,
}

impl RetryNotice {
    /// `server busy (HTTP 429) — retrying in 3 s (retry 2 of 4)`.
    pub fn line(&self) -> String {
        let secs = self.delay.as_secs_f64();
        let wait = if secs < 1.0 {
            format!("{secs:.1} s")
        } else {
            format!("{} s", secs.round())
        };
        format!(
            "{} — retrying in {wait} (retry {} of {})",
            self.reason, self.retry, self.max_retries
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_reads_as_one_line() {
        let notice = RetryNotice {
            session_id: None,
            reason: "server busy (HTTP 429)".into(),
            retry: 2,
            max_retries: 4,
            delay: Duration::from_millis(2600),
        };
        assert_eq!(
            notice.line(),
            "server busy (HTTP 429) — retrying in 3 s (retry 2 of 4)"
        );
        let soon = RetryNotice {
            delay: Duration::from_millis(420),
            ..notice
        };
        assert!(soon.line().contains("retrying in 0.4 s"));
    }
}
