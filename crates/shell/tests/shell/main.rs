//! dsh-shell's suite: task ids, `resolve`, the outcome helpers and the chunk decoder.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use dsh_shell::text::decode_chunk;
use dsh_shell::{
    EndCause, ExitInfo, KillCause, OutputStats, ResolveLimits, ShellError, ShellExecRequest, Spill,
    TaskDoneSubscription, TaskId, resolve,
};

fn limits() -> ResolveLimits {
    ResolveLimits {
        default_workdir: "/work/app".into(),
        default_timeout: Duration::from_secs(120),
        max_timeout: Duration::from_secs(600),
        default_output_cap: 30_000,
        max_output_cap: 1_000_000,
    }
}

#[test]
fn task_ids_are_unique_canonical_and_parse_strictly() {
    let (a, b) = (TaskId::allocate(), TaskId::allocate());
    assert!(b > a);
    assert_eq!(a.to_string().parse::<TaskId>().unwrap(), a);
    for bad in [
        "sh-01",
        "sh-0",
        "sh-",
        "x-1",
        "sh-+1",
        "sh-1 ",
        "SH-1",
        "sh-99999999999999999999",
    ] {
        assert!(bad.parse::<TaskId>().is_err(), "{bad:?}");
    }
    assert!(a.is_of_this_run());
    let text = a.to_string();
    let (tag, n) = text["sh-".len()..].split_once('-').unwrap();
    assert_eq!(tag.len(), 4, "{text}");
    assert_eq!(n.parse::<u64>().unwrap(), a.get());
    for bad in [
        "sh-abc-1",
        "sh-abcde-1",
        "sh-ABCD-1",
        "sh-abci-1",
        "sh-abcd-",
        "sh-abcd-01",
    ] {
        assert!(bad.parse::<TaskId>().is_err(), "{bad:?}");
    }
    // An id of the first format, and one of another run: ids, but never this run's tasks.
    let legacy: TaskId = "sh-7".parse().unwrap();
    assert_eq!((legacy.get(), legacy.to_string().as_str()), (7, "sh-7"));
    assert!(!legacy.is_of_this_run());
    let other_tag = if tag == "zzzz" { "yyyy" } else { "zzzz" };
    let earlier: TaskId = format!("sh-{other_tag}-{n}").parse().unwrap();
    assert!(!earlier.is_of_this_run());
    assert_ne!(earlier, a, "the same number in another run is another task");
}

#[test]
fn resolve_applies_every_default_and_cap_and_copies_the_owner_verbatim() {
    let spec = resolve(ShellExecRequest::new("true"), &limits()).unwrap();
    assert_eq!(spec.workdir, PathBuf::from("/work/app"));
    assert_eq!(spec.timeout, Some(Duration::from_secs(120)));
    assert_eq!(spec.output_cap, 30_000);
    assert_eq!(spec.owner, None);
    let cases: [(ShellExecRequest, PathBuf, Option<Duration>, usize); 5] = [
        (
            ShellExecRequest::new("x").workdir("sub/../other/."),
            "/work/app/other".into(),
            Some(Duration::from_secs(120)),
            30_000,
        ),
        (
            ShellExecRequest::new("x").workdir("/abs"),
            "/abs".into(),
            Some(Duration::from_secs(120)),
            30_000,
        ),
        (
            ShellExecRequest::new("x").timeout(Duration::from_secs(9_999)),
            "/work/app".into(),
            Some(Duration::from_secs(600)),
            30_000,
        ),
        (
            ShellExecRequest::new("x").background(true),
            "/work/app".into(),
            None,
            30_000,
        ),
        (
            ShellExecRequest::new("x").output_cap(usize::MAX),
            "/work/app".into(),
            Some(Duration::from_secs(120)),
            1_000_000,
        ),
    ];
    for (request, workdir, timeout, cap) in cases {
        let spec = resolve(request, &limits()).unwrap();
        assert_eq!(
            (spec.workdir, spec.timeout, spec.output_cap),
            (workdir, timeout, cap)
        );
    }
    let owned = resolve(ShellExecRequest::new("true").owner(""), &limits()).unwrap();
    assert_eq!(
        owned.owner.as_deref(),
        Some(""),
        "an empty owner is a real owner"
    );
}

#[test]
fn resolve_refuses_bad_requests_naming_the_field() {
    let mut env_key = ShellExecRequest::new("x");
    env_key.env.insert("A=B".into(), "v".into());
    let mut env_value = ShellExecRequest::new("x");
    env_value.env.insert("A".into(), "v\0".into());
    let cases = [
        (ShellExecRequest::new(""), "command"),
        (ShellExecRequest::new("a\0b"), "command"),
        (
            ShellExecRequest::new("x".repeat(dsh_shell::MAX_COMMAND_BYTES + 1)),
            "command",
        ),
        (ShellExecRequest::new("x").workdir("a\0b"), "workdir"),
        (
            ShellExecRequest::new("x").timeout(Duration::ZERO),
            "timeout",
        ),
        (ShellExecRequest::new("x").output_cap(0), "output_cap"),
        (env_key, "env"),
        (env_value, "env"),
    ];
    for (request, expected) in cases {
        match resolve(request, &limits()) {
            Err(ShellError::InvalidRequest { field, .. }) => assert_eq!(field, expected),
            other => panic!("{expected}: {other:?}"),
        }
    }
}

#[test]
fn a_hand_built_spec_is_checked_for_the_cheap_invariants() {
    let mut spec = resolve(ShellExecRequest::new("true"), &limits()).unwrap();
    assert!(spec.check().is_ok());
    spec.timeout = None;
    assert!(spec.check().is_err(), "a foreground spec needs a deadline");
    spec.background = true;
    assert!(spec.check().is_ok());
    spec.workdir = "relative".into();
    assert!(spec.check().is_err());
}

#[test]
fn exit_helpers_say_how_a_task_ended() {
    let exit = |end: EndCause, code: Option<i32>| ExitInfo {
        code,
        signal: None,
        end,
        duration: Duration::from_millis(5),
        stragglers_terminated: false,
        output: OutputStats {
            total_bytes: 0,
            truncated: false,
            spill: Spill::None,
        },
    };
    assert!(exit(EndCause::Exited, Some(0)).success());
    assert!(!exit(EndCause::Exited, Some(1)).success());
    assert!(
        exit(
            EndCause::TimedOut {
                after: Duration::from_secs(1)
            },
            Some(0)
        )
        .timed_out()
    );
    assert!(
        !exit(
            EndCause::TimedOut {
                after: Duration::from_secs(1)
            },
            Some(0)
        )
        .success()
    );
    assert!(exit(EndCause::Killed(KillCause::Cancelled), None).killed());
}

#[test]
fn dropping_a_subscription_unsubscribes_at_once() {
    let gone = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = gone.clone();
    let subscription =
        TaskDoneSubscription::new(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    assert!(!gone.load(std::sync::atomic::Ordering::SeqCst));
    drop(subscription);
    assert!(gone.load(std::sync::atomic::Ordering::SeqCst));
}

#[test]
fn consecutive_chunks_decode_without_replacements_at_their_cuts() {
    let text = "aé€😀z — ünïcödé";
    let bytes = text.as_bytes();
    for size in 1..=7 {
        let mut out = String::new();
        let mut offset = 0;
        while offset < bytes.len() {
            let end = (offset + size).min(bytes.len());
            let last = end == bytes.len();
            let decoded = decode_chunk(&bytes[offset..end], offset == 0, !last);
            assert_eq!(
                decoded.skipped_leading, 0,
                "a consumer that advances by len - held_back never lands mid-character"
            );
            out.push_str(&decoded.text);
            let advanced = end - offset - decoded.held_back;
            if advanced == 0 {
                // Too small to hold one character: read a bigger chunk from the same offset.
                let end = (offset + 4).min(bytes.len());
                let decoded = decode_chunk(&bytes[offset..end], offset == 0, end != bytes.len());
                out.push_str(&decoded.text);
                offset = end - decoded.held_back;
            } else {
                offset += advanced;
            }
        }
        assert_eq!(out, text, "chunks of {size}");
    }
}

#[test]
fn a_chunk_starting_mid_character_skips_its_tail_and_invalid_bytes_become_replacements() {
    let euro = "€".as_bytes(); // e2 82 ac
    let decoded = decode_chunk(&[euro[1], euro[2], b'a'], false, false);
    assert_eq!((decoded.text.as_str(), decoded.skipped_leading), ("a", 2));
    let at_start = decode_chunk(&[euro[1], b'a'], true, false);
    assert_eq!(
        at_start.text, "\u{fffd}a",
        "at offset 0 nothing owns the byte"
    );
    let bad = decode_chunk(&[b'a', 0xff, b'b'], true, true);
    assert_eq!(bad.text, "a\u{fffd}b");
    let held = decode_chunk(&[b'a', euro[0], euro[1]], true, true);
    assert_eq!((held.text.as_str(), held.held_back), ("a", 2));
    let complete = decode_chunk(&[b'a', euro[0], euro[1]], true, false);
    assert_eq!(
        complete.text, "a\u{fffd}",
        "at the end nothing more can come"
    );
}
