//! Live tool output, measured on the built binary with the replay model: how soon a command's
//! first line reaches a pseudo-terminal and an ACP client after the command wrote it, and
//! what showing a chatty command's output costs dsh itself (CPU per MiB, the command's own
//! CPU subtracted).
//! Run with `cargo bench -p dsh --bench live`; figures go to stdout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_dsh");

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn script(dir: &std::path::Path, command: &str) -> String {
    let path = dir.join("script.json");
    let entries = json!([
        {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": command}}}]},
        {"stream": [{"text": "done"}], "finish": "stop"}
    ]);
    std::fs::write(
        &path,
        json!({"version": 1, "name": "live", "entries": entries}).to_string(),
    )
    .unwrap();
    path.display().to_string()
}

/// A 200-column pseudo-terminal.
fn open_pty() -> portable_pty::PtyPair {
    native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 200,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap()
}

/// User plus system seconds from the `cpu:%U:%S` line `/usr/bin/time` wrote into `report`.
fn cpu_seconds(report: &str) -> f64 {
    let line = report.lines().find(|l| l.starts_with("cpu:")).unwrap();
    let parts: Vec<f64> = line[4..].split(':').map(|p| p.parse().unwrap()).collect();
    parts[0] + parts[1]
}

/// The command prints the time it writes its first line; returns how much later the terminal
/// got it.
fn first_line_on_a_pty() -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path(), "echo \"stamp:$(date +%s%N):\"; sleep 0.2");
    let pty = open_pty();
    let mut command = CommandBuilder::new(BIN);
    command.args(["--data-dir", &dir.path().join("data").display().to_string()]);
    command.args(["run", "--replay", &script, "go"]);
    command.cwd(dir.path());
    command.env("TERM", "xterm-256color");
    let mut child = pty.slave.spawn_command(command).unwrap();
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let latency = loop {
        let n = reader.read(&mut buf).unwrap();
        let at = now_ns();
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        // The command line shows `stamp:$(date …`; only the output has digits after it.
        if let Some(stamp) = seen
            .split("stamp:")
            .skip(1)
            .filter_map(|rest| rest.split(':').next())
            .find_map(|s| s.parse::<u128>().ok())
        {
            break Duration::from_nanos((at.saturating_sub(stamp)) as u64);
        }
    };
    child.wait().unwrap();
    latency
}

/// The same over ACP: the card's first `terminal_output`.
fn first_line_over_acp() -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path(), "echo \"stamp:$(date +%s%N):\"; sleep 0.2");
    let mut latency = None;
    one_prompt_over_acp(&[], &script, dir.path(), |frame, at| {
        if let Some(data) = frame["params"]["update"]["_meta"]["terminal_output"]["data"].as_str()
            && let Some(stamp) = data
                .strip_prefix("stamp:")
                .and_then(|rest| rest.split(':').next())
                .and_then(|s| s.parse::<u128>().ok())
        {
            latency = Some(Duration::from_nanos((at.saturating_sub(stamp)) as u64));
        }
    });
    latency.unwrap()
}

/// `dsh acp` (after `wrapper`, say `/usr/bin/time`) serving a client that shows terminal
/// cards: one session, one prompt replaying `script`; `each` sees every frame with the time
/// it was read.
fn one_prompt_over_acp(
    wrapper: &[&str],
    script: &str,
    dir: &std::path::Path,
    mut each: impl FnMut(&Value, u128),
) {
    let (program, before) = match wrapper.split_first() {
        Some((program, rest)) => (*program, [rest, &[BIN]].concat()),
        None => (BIN, Vec::new()),
    };
    let mut child = Command::new(program)
        .args(before)
        .args(["--data-dir", &dir.join("data-acp").display().to_string()])
        .args(["--replay", script, "acp", "--permission", "allow"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |frame: Value| writeln!(stdin, "{frame}").unwrap();
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {"_meta": {"terminal_output": true}}}}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": dir, "mcpServers": []}}));
    for line in lines {
        let at = now_ns();
        let frame: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if frame["id"] == 2 {
            let session = frame["result"]["sessionId"].clone();
            send(
                json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
            );
        }
        each(&frame, at);
        if frame["id"] == 3 {
            break;
        }
    }
    drop(stdin);
    child.wait().unwrap();
}

/// User plus system CPU seconds of `program args…` and everything it waited for, by
/// `/usr/bin/time`.
fn cpu_of(program: &str, args: &[&str], dir: &std::path::Path) -> f64 {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "cpu:%U:%S"])
        .arg(program)
        .args(args)
        .current_dir(dir)
        .env("TERM", "dumb")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    cpu_seconds(&String::from_utf8_lossy(&out.stderr))
}

/// As [`cpu_of`], with dsh on a 200-column pseudo-terminal (`TERM=xterm-256color`, so the
/// spinner and colours are on) whose output is read as fast as it comes.
fn cpu_on_a_pty(args: &[&str], dir: &std::path::Path) -> f64 {
    let pty = open_pty();
    let report = dir.join("time.txt");
    let mut command = CommandBuilder::new("/usr/bin/time");
    command.args(["-o", &report.display().to_string(), "-f", "cpu:%U:%S", BIN]);
    command.args(args);
    command.cwd(dir);
    command.env("TERM", "xterm-256color");
    let mut child = pty.slave.spawn_command(command).unwrap();
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().unwrap();
    let mut buf = [0u8; 65536];
    while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
    child.wait().unwrap();
    cpu_seconds(&std::fs::read_to_string(&report).unwrap())
}

/// As [`cpu_of`], with dsh serving ACP to a client that shows terminal cards: one prompt
/// replaying `script`, every frame read.
fn cpu_over_acp(script: &str, dir: &std::path::Path) -> f64 {
    let report = dir.join("time-acp.txt").display().to_string();
    let wrapper = ["/usr/bin/time", "-o", &report, "-f", "cpu:%U:%S"];
    one_prompt_over_acp(&wrapper, script, dir, |_, _| {});
    cpu_seconds(&std::fs::read_to_string(&report).unwrap())
}

fn main() {
    let mut pty: Vec<Duration> = (0..20).map(|_| first_line_on_a_pty()).collect();
    pty.sort();
    println!(
        "first line on a pty after the command wrote it: p50 {:?}, max {:?} ({} runs)",
        pty[pty.len() / 2],
        pty[pty.len() - 1],
        pty.len()
    );
    let mut acp: Vec<Duration> = (0..20).map(|_| first_line_over_acp()).collect();
    acp.sort();
    println!(
        "first line in an ACP card after the command wrote it: p50 {:?}, max {:?} ({} runs)",
        acp[acp.len() / 2],
        acp[acp.len() - 1],
        acp.len()
    );
    let mib = 100u64;
    let chatty = format!("yes | head -c {}", mib * 1024 * 1024);
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path(), &chatty);
    let data = dir.path().join("data").display().to_string();
    let total = cpu_of(
        BIN,
        &["--data-dir", &data, "run", "--replay", &script, "go"],
        dir.path(),
    );
    let command = cpu_of("bash", &["-c", &chatty], dir.path());
    let data_pty = dir.path().join("data-pty").display().to_string();
    let on_pty = cpu_on_a_pty(
        &["--data-dir", &data_pty, "run", "--replay", &script, "go"],
        dir.path(),
    );
    let over_acp = cpu_over_acp(&script, dir.path());
    for (how, total) in [
        ("piped", total),
        ("on a pty", on_pty),
        ("over ACP", over_acp),
    ] {
        let own = (total - command).max(0.0);
        println!(
            "{mib} MiB of output through the live path ({how}): dsh's own CPU {:.1} ms per MiB ({total:.2} s in all, the command alone {command:.2} s)",
            own * 1000.0 / mib as f64
        );
    }
}
