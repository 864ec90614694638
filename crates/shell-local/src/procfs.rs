//! What `/proc` says about processes: their parent, group, session and state, their
//! environment, and the children of the dsh process. Linux only; elsewhere every answer is the
//! conservative one (no children known, a group that answers signals is alive).

/// The fields of `/proc/<pid>/stat` the executor uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub state: u8,
    pub pgrp: i32,
    pub session: i32,
}

impl Stat {
    pub fn zombie(&self) -> bool {
        self.state == b'Z'
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::Stat;
    use std::fs;

    pub fn stat(pid: i32) -> Option<Stat> {
        parse_stat(&fs::read(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Fields after the command name, which is parenthesised and may itself hold `)`.
    fn parse_stat(raw: &[u8]) -> Option<Stat> {
        let close = raw.iter().rposition(|&b| b == b')')?;
        let rest = std::str::from_utf8(raw.get(close + 2..)?).ok()?;
        let mut fields = rest.split_ascii_whitespace();
        let state = *fields.next()?.as_bytes().first()?;
        let _ppid = fields.next()?;
        let pgrp = fields.next()?.parse().ok()?;
        let session = fields.next()?.parse().ok()?;
        Some(Stat {
            state,
            pgrp,
            session,
        })
    }

    /// Children of every thread of this process: re-parented orphans land on any of them.
    pub fn children_of_self() -> Vec<i32> {
        let mut out = Vec::new();
        let Ok(threads) = fs::read_dir("/proc/self/task") else {
            return out;
        };
        for thread in threads.flatten() {
            if let Ok(text) = fs::read_to_string(thread.path().join("children")) {
                out.extend(
                    text.split_ascii_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Every process id in `/proc`.
    pub fn all_pids() -> Vec<i32> {
        let Ok(entries) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<i32>().ok())
            })
            .collect()
    }

    pub fn environ_has(pid: i32, wanted: &dyn Fn(&[u8]) -> bool) -> bool {
        fs::read(format!("/proc/{pid}/environ")).is_ok_and(|raw| raw.split(|&b| b == 0).any(wanted))
    }

    pub fn group_has_live_member(pgid: i32) -> bool {
        let Ok(entries) = fs::read_dir("/proc") else {
            return true;
        };
        entries.flatten().any(|entry| {
            entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<i32>().ok())
                .and_then(stat)
                .is_some_and(|s| s.pgrp == pgid && !s.zombie())
        })
    }

    #[cfg(test)]
    mod tests {
        use super::parse_stat;

        #[test]
        fn a_command_name_holding_parentheses_does_not_shift_the_fields() {
            let raw = b"42 (we ird) (x)) S 1 40 41 0 -1";
            let stat = parse_stat(raw).unwrap();
            assert_eq!((stat.state, stat.pgrp, stat.session), (b'S', 40, 41));
            assert!(parse_stat(b"42 (x").is_none());
        }
    }
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{all_pids, children_of_self, environ_has, group_has_live_member, stat};

#[cfg(not(target_os = "linux"))]
mod other {
    use super::Stat;

    pub fn stat(_pid: i32) -> Option<Stat> {
        None
    }
    pub fn children_of_self() -> Vec<i32> {
        Vec::new()
    }
    pub fn all_pids() -> Vec<i32> {
        Vec::new()
    }
    pub fn environ_has(_pid: i32, _wanted: &dyn Fn(&[u8]) -> bool) -> bool {
        false
    }
    pub fn group_has_live_member(_pgid: i32) -> bool {
        true
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) use other::{all_pids, children_of_self, environ_has, group_has_live_member, stat};
