//! The sandbox helper: the program a sandboxed command is started through. It confines its
//! own process with the kernel's Landlock (the file system) and a seccomp filter (the
//! network), then `exec`s the command, which inherits the confinement and keeps the helper's
//! pid: the process group, the owner, the output pipe, the sweep and the watchdog see the
//! command exactly as they see an unconfined one.
//!
//! The executor names the helper in `LocalShellConfig::sandbox_helper` (the dsh binary,
//! whose `main` hands over to [`run_if_requested`] first) and starts
//! `<helper> --dsh-shell-sandbox <network|offline> <git|nogit> <n> <dir>… -- <shell> -c
//! <command>`. With `git`, each writable directory's `.git/hooks` and `.git/config` are
//! made read-only first ([`crate::git_guard`]).
//! Everything is done through the `landlock` and `seccompiler` crates' safe interfaces: no
//! `unsafe` here, and nothing between `fork` and `exec`.
//!
//! It fails closed: when the confinement cannot be applied the command is not run, and the
//! helper exits 126 with the reason on stderr. [`probe`] tells beforehand whether it can be
//! applied on this machine, so the executor refuses (and its consumer asks the user) instead.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use dsh_shell::SandboxPolicy;

use crate::git_guard;
use landlock::{
    ABI, Access, AccessFs, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The first argument that makes the program run as the sandbox helper.
pub const ARG: &str = "--dsh-shell-sandbox";
/// Set to `off`, the helper finds no Landlock, as on a kernel without it: how the fallback
/// (ask before every command) is checked on a machine that has it.
pub const LANDLOCK_VAR: &str = "DSH_SANDBOX_LANDLOCK";
/// The exit status of a command the sandbox kept from running.
pub const REFUSED: u8 = 126;

/// The newest Landlock ABI asked for; older kernels get what they have (best effort), and
/// what they enforced is reported.
const ASKED_ABI: ABI = ABI::V6;

/// What confining a process achieved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Achieved {
    /// The Landlock ABI the kernel offers.
    pub abi: i32,
    /// Every file-system restriction asked for is enforced (else some, on an older ABI).
    pub fully: bool,
    /// Why a writable directory's `.git/hooks` and `.git/config` cannot be kept read-only
    /// here; `None` when they can.
    pub git_unguarded: Option<String>,
}

/// Why a process could not be confined.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel has no Landlock, or it is turned off.
    #[error("the kernel does not enforce Landlock ({0})")]
    NoLandlock(String),
    /// Landlock refused the rules.
    #[error("Landlock refused the rules: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// The network filter could not be built or loaded.
    #[error("the seccomp network filter cannot be loaded: {0}")]
    Seccomp(String),
}

/// What the helper confines a command to: the directories it may write, and whether it may
/// open network sockets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confinement {
    /// Written to, with everything under them.
    pub writable: Vec<PathBuf>,
    /// Network sockets allowed (Unix sockets always are).
    pub network: bool,
    /// The `.git/hooks` and `.git/config` of each writable directory kept read-only.
    pub guard_git: bool,
}

impl Confinement {
    /// The confinement of `policy`, with `private` (the command's temporary directory and
    /// the spill directory) writable too; `None` for no sandbox. `.git` is guarded.
    pub fn of(policy: &SandboxPolicy, private: &[PathBuf]) -> Option<Confinement> {
        let (mut writable, network) = match policy {
            SandboxPolicy::FullAccess => return None,
            SandboxPolicy::ReadOnly => (Vec::new(), false),
            SandboxPolicy::WorkspaceWrite { writable, network } => (writable.clone(), *network),
        };
        writable.extend(private.iter().cloned());
        Some(Confinement {
            writable,
            network,
            guard_git: true,
        })
    }

    /// The helper's arguments before `--`.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            ARG.into(),
            if self.network { "network" } else { "offline" }.into(),
            if self.guard_git { "git" } else { "nogit" }.into(),
            self.writable.len().to_string().into(),
        ];
        args.extend(self.writable.iter().map(|d| d.as_os_str().to_owned()));
        args.push("--".into());
        args
    }

    /// Reads the arguments after [`ARG`]: the confinement and the command (program first).
    fn parse(mut args: impl Iterator<Item = OsString>) -> Option<(Confinement, Vec<OsString>)> {
        let network = match args.next()?.to_str()? {
            "network" => true,
            "offline" => false,
            _ => return None,
        };
        let guard_git = match args.next()?.to_str()? {
            "git" => true,
            "nogit" => false,
            _ => return None,
        };
        let count: usize = args.next()?.to_str()?.parse().ok()?;
        let writable = (0..count)
            .map(|_| args.next().map(PathBuf::from))
            .collect::<Option<Vec<_>>>()?;
        if args.next()? != "--" {
            return None;
        }
        let command: Vec<OsString> = args.collect();
        let confinement = Confinement {
            writable,
            network,
            guard_git,
        };
        (!command.is_empty()).then_some((confinement, command))
    }
}

/// For a binary's `main`, before anything else: when this process was started as the
/// sandbox helper, confines itself and `exec`s the command (or, with `probe`, reports what
/// confinement this machine gives); otherwise `None`, and the program goes on.
pub fn run_if_requested() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != ARG {
        return None;
    }
    let mut rest = args.peekable();
    if rest.peek().is_some_and(|a| a == "probe") {
        return Some(report_probe());
    }
    let Some((confinement, command)) = Confinement::parse(rest) else {
        eprintln!("dsh: the sandbox helper was started with arguments it cannot read");
        return Some(ExitCode::from(REFUSED));
    };
    // The mounts come first: a process Landlock confines may not change them.
    let guarded = match confinement.guard_git {
        true => git_guard::guard(&confinement.writable),
        false => Ok(()),
    };
    if let Err(e) = guarded {
        eprintln!("dsh: the command did not run: .git cannot be kept read-only: {e}");
        return Some(ExitCode::from(REFUSED));
    }
    if let Err(e) = confine(&confinement) {
        eprintln!("dsh: the command did not run: {e}");
        return Some(ExitCode::from(REFUSED));
    }
    let (program, args) = command.split_first()?;
    // `exec` returns only when it failed.
    let failed = Command::new(program).args(args).exec();
    eprintln!(
        "dsh: cannot start {}: {failed}",
        Path::new(program).display()
    );
    Some(ExitCode::from(127))
}

/// The probe's answer, one line on stderr (stdout is the commands' own, never dsh's):
/// `landlock <abi> full|partial git`, `landlock <abi> full|partial nogit <reason>`, or
/// `none <reason>`.
fn report_probe() -> ExitCode {
    let git = git_guard::probe();
    let line = match confine(&Confinement {
        writable: Vec::new(),
        network: false,
        guard_git: false,
    }) {
        Ok(achieved) => format!(
            "landlock {} {} {}",
            achieved.abi,
            if achieved.fully { "full" } else { "partial" },
            match git {
                Ok(()) => "git".to_owned(),
                Err(reason) => format!("nogit {reason}"),
            }
        ),
        Err(e) => format!("none {e}"),
    };
    eprintln!("{line}");
    ExitCode::SUCCESS
}

/// Whether a sandboxed command can run here: starts `helper` in probe mode (a process of its
/// own, which it confines and discards) and reads its answer.
pub fn probe(helper: &Path) -> Result<Achieved, String> {
    let output = Command::new(helper)
        .args([ARG, "probe"])
        .output()
        .map_err(|e| format!("the sandbox helper {} cannot start: {e}", helper.display()))?;
    let answer = String::from_utf8_lossy(&output.stderr);
    let mut words = answer.trim().splitn(3, ' ');
    match (words.next(), words.next(), words.next()) {
        (Some("landlock"), Some(abi), Some(rest)) => {
            let (level, git) = rest.split_once(' ').unwrap_or((rest, ""));
            let git_unguarded = match git == "git" {
                true => None,
                false => Some(git.strip_prefix("nogit ").map_or_else(
                    || format!("the sandbox helper answered {:?}", answer.trim()),
                    str::to_owned,
                )),
            };
            Ok(Achieved {
                abi: abi.parse().unwrap_or(0),
                fully: level == "full",
                git_unguarded,
            })
        }
        (Some("none"), first, rest) => Err([first, rest]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ")),
        _ => Err(format!("the sandbox helper answered {:?}", answer.trim())),
    }
}

/// Confines this process: everything readable, `writable` (and `/dev/null`) writable,
/// network sockets refused unless allowed.
pub fn confine(confinement: &Confinement) -> Result<Achieved, SandboxError> {
    if std::env::var_os(LANDLOCK_VAR).is_some_and(|v| v == "off") {
        return Err(SandboxError::NoLandlock(format!(
            "turned off by {LANDLOCK_VAR}=off"
        )));
    }
    let writable = confinement
        .writable
        .iter()
        .map(PathBuf::as_path)
        .chain([Path::new("/dev/null")]);
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(ASKED_ABI))?
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ASKED_ABI)))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(ASKED_ABI)))?
        .restrict_self()?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi as i32,
        LandlockStatus::NotEnabled => {
            return Err(SandboxError::NoLandlock("it is not enabled".into()));
        }
        LandlockStatus::NotImplemented => {
            return Err(SandboxError::NoLandlock("it is not built in".into()));
        }
    };
    let fully = match status.ruleset {
        RulesetStatus::FullyEnforced => true,
        RulesetStatus::PartiallyEnforced => false,
        RulesetStatus::NotEnforced => {
            return Err(SandboxError::NoLandlock(format!(
                "ABI {abi} enforced nothing"
            )));
        }
    };
    if !confinement.network {
        refuse_network()?;
    }
    Ok(Achieved {
        abi,
        fully,
        git_unguarded: None,
    })
}

/// A seccomp filter that refuses `socket(2)` for every family but `AF_UNIX` (local sockets
/// stay: build tools and agents talk over them) and `io_uring`, which could open sockets
/// around it.
fn refuse_network() -> Result<(), SandboxError> {
    let failed = |e: &dyn std::fmt::Display| SandboxError::Seccomp(e.to_string());
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| failed(&e))?;
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )
    .map_err(|e| failed(&e))?;
    let rules = BTreeMap::from([
        (
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix]).map_err(|e| failed(&e))?],
        ),
        (libc::SYS_io_uring_setup, Vec::new()),
    ]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| failed(&e))?;
    let program: BpfProgram = filter.try_into().map_err(|e| failed(&e))?;
    seccompiler::apply_filter(&program).map_err(|e| failed(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_carry_the_confinement_and_the_command_whole() {
        let confinement = Confinement::of(
            &SandboxPolicy::WorkspaceWrite {
                writable: vec!["/w/a dir".into()],
                network: false,
            },
            &["/tmp/private".into()],
        )
        .unwrap();
        let mut args = confinement.args();
        assert_eq!(args[0], ARG);
        args.extend(["bash".into(), "-c".into(), "echo '--'".into()]);
        let (read, command) = Confinement::parse(args.into_iter().skip(1)).unwrap();
        assert_eq!(read, confinement);
        assert_eq!(command, ["bash", "-c", "echo '--'"]);
        assert_eq!(Confinement::of(&SandboxPolicy::FullAccess, &[]), None);
        let bad = ["sideways", "git", "0", "--", "x"].map(OsString::from);
        assert!(Confinement::parse(bad.into_iter()).is_none());
    }
}
