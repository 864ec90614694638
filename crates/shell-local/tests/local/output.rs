//! The output stream: the exact tail, the spill file, stateless reads.

use std::os::unix::fs::PermissionsExt;

use dsh_shell::{ShellError, ShellExecRequest, ShellExecutor, Spill, SpillStop};

use crate::support::*;

#[tokio::test]
async fn output_of_exactly_the_cap_is_whole_and_one_more_byte_truncates() {
    let exec = executor();
    let spec = exec
        .resolve(ShellExecRequest::new("printf 0123456789abcdef").output_cap(16))
        .unwrap();
    let out = exec.run(spec).await.unwrap();
    assert!(!out.exit.output.truncated);
    assert_eq!(out.exit.output.spill, Spill::None);
    assert!(!out.retained);
    let spec = exec
        .resolve(ShellExecRequest::new("printf 0123456789abcdefg").output_cap(16))
        .unwrap();
    let out = exec.run(spec).await.unwrap();
    assert!(out.exit.output.truncated);
    assert_eq!(&out.tail[..], b"123456789abcdefg");
    assert_eq!(out.tail_start, 1);
    assert!(out.retained);
    exec.release(out.task_id).await.unwrap();
    exec.dispose().await;
}

#[tokio::test]
async fn a_huge_output_spills_to_a_private_file_and_reads_back_exactly() {
    let exec = executor();
    let expected: Vec<u8> = (1..=3_000_000)
        .flat_map(|n: u32| format!("{n}\n").into_bytes())
        .collect();
    let out = fg(&exec, "seq 1 3000000").await;
    assert!(out.exit.output.truncated);
    assert_eq!(out.tail.len(), 64 * 1024);
    assert_eq!(&out.tail[..], &expected[expected.len() - 64 * 1024..]);
    assert_eq!(
        out.exit.output.spill,
        Spill::Complete {
            bytes: expected.len() as u64
        }
    );
    assert!(out.retained);
    let path = exec.spill_path(out.task_id).unwrap();
    assert_eq!(path.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    let dir = path.parent().unwrap();
    assert_eq!(dir.metadata().unwrap().permissions().mode() & 0o777, 0o700);
    let chunk = exec.read_output(out.task_id, 8192, 100).await.unwrap();
    assert_eq!(&chunk.bytes[..], &expected[8192..8292]);
    // Random reads equal the corresponding slices.
    let mut rng = fastrand::Rng::with_seed(7);
    for _ in 0..200 {
        let since = rng.u64(..=expected.len() as u64);
        let limit = rng.usize(1..200_000);
        let chunk = exec.read_output(out.task_id, since, limit).await.unwrap();
        assert_eq!(chunk.skipped, 0);
        assert_eq!(chunk.start, since);
        assert_eq!(
            &chunk.bytes[..],
            &expected[since as usize..chunk.next as usize]
        );
        assert!(chunk.bytes.len() <= limit);
    }
    assert_eq!(read_all(&exec, out.task_id, 1 << 20).await, expected);
    exec.release(out.task_id).await.unwrap();
    assert!(!path.exists(), "release deletes the spill file");
    exec.dispose().await;
    assert!(!dir.exists(), "dispose deletes the spill directory");
}

#[tokio::test]
async fn a_full_spill_keeps_the_head_and_reads_in_the_gap_report_skipped_bytes() {
    let exec = executor_with(|c| c.spill_cap = 1 << 20);
    let out = fg(
        &exec,
        "head -c 5242880 /dev/urandom | od -An -v -tx1 | head -c 5242880",
    )
    .await;
    let total = out.exit.output.total_bytes;
    assert_eq!(total, 5 << 20);
    assert_eq!(
        out.exit.output.spill,
        Spill::Partial {
            bytes: 1 << 20,
            stop: SpillStop::CapReached
        }
    );
    let chunk = exec
        .read_output(out.task_id, (1 << 20) + 10, 100)
        .await
        .unwrap();
    let ring_start = total - 64 * 1024;
    assert_eq!(chunk.start, ring_start);
    assert_eq!(chunk.skipped, ring_start - (1 << 20) - 10);
    assert_eq!(&chunk.bytes[..], &out.tail[..100]);
    exec.dispose().await;
}

#[tokio::test]
async fn a_spill_root_removed_after_construction_keeps_the_tail_and_reports_the_failure() {
    let root = tempfile::tempdir().unwrap();
    let exec = executor_with(|c| {
        c.spill_root = Some(root.path().to_path_buf());
        c.output_cap = 16;
    });
    drop(root);
    let out = fg(&exec, "seq 1 1000").await;
    assert_eq!(
        out.exit.output.spill,
        Spill::Partial {
            bytes: 0,
            stop: SpillStop::WriteFailed
        }
    );
    let all: String = (1..=1000).map(|n| format!("{n}\n")).collect();
    assert_eq!(text(&out.tail), all[all.len() - 16..]);
    exec.dispose().await;
}

#[tokio::test]
async fn reads_are_stateless_bounded_and_checked() {
    let exec = executor();
    let id = bg(&exec, "printf 'hello world'").await;
    exec.wait(id).await.unwrap();
    let a = exec.read_output(id, 2, 3).await.unwrap();
    let b = exec.read_output(id, 2, 3).await.unwrap();
    assert_eq!(a.bytes, b.bytes);
    assert_eq!(&a.bytes[..], b"llo");
    assert_eq!((a.start, a.next, a.total), (2, 5, 11));
    assert!(matches!(
        exec.read_output(id, 12, 3).await,
        Err(ShellError::InvalidRequest { field: "since", .. })
    ));
    assert!(matches!(
        exec.read_output(id, 0, 0).await,
        Err(ShellError::InvalidRequest { field: "limit", .. })
    ));
    let end = exec.read_output(id, 0, 100).await.unwrap();
    assert!(end.exit.is_some() && end.next == end.total);
    exec.dispose().await;
}

#[tokio::test]
async fn spill_files_are_deleted_on_eviction_and_when_a_cancelled_run_ends() {
    let exec = executor_with(|c| {
        c.output_cap = 16;
        c.max_finished_tasks = 1;
    });
    let first = bg(&exec, "seq 1 100").await;
    exec.wait(first).await.unwrap();
    let path = exec.spill_path(first).unwrap();
    let second = bg(&exec, "true").await;
    exec.wait(second).await.unwrap();
    file_gone(path).await;
    assert!(matches!(
        exec.read_output(first, 0, 1).await,
        Err(ShellError::UnknownTask(_))
    ));
    // A cancelled run whose output spilled is removed when it ends, spill file and all.
    let spec = exec
        .resolve(ShellExecRequest::new("seq 1 100; sleep 1000"))
        .unwrap();
    let mut seen = None;
    tokio::select! {
        _ = exec.run(spec) => panic!("never ends by itself"),
        () = eventually("spilling", || {
            seen = exec.list().iter().find_map(|t| exec.spill_path(t.id));
            seen.is_some()
        }) => {}
    }
    file_gone(seen.unwrap()).await;
    exec.dispose().await;
}

#[tokio::test]
async fn reads_split_inside_characters_decode_without_replacement_characters() {
    use dsh_shell::text::decode_chunk;
    let exec = executor();
    let id = bg(&exec, "for i in $(seq 1 30000); do printf '€'; done").await;
    exec.wait(id).await.unwrap();
    let mut text = String::new();
    let mut at = 0;
    loop {
        let chunk = exec.read_output(id, at, 1000).await.unwrap();
        let complete = chunk.exit.is_some() && chunk.next == chunk.total;
        let decoded = decode_chunk(&chunk.bytes, chunk.start == 0, !complete);
        text.push_str(&decoded.text);
        at = chunk.next - decoded.held_back as u64;
        if complete {
            break;
        }
    }
    assert_eq!(text, "€".repeat(30000));
    // A read starting inside a character skips at most the three bytes of its tail.
    let chunk = exec.read_output(id, 1, 100).await.unwrap();
    let decoded = decode_chunk(&chunk.bytes, false, true);
    assert!(decoded.skipped_leading <= 3 && !decoded.text.contains('\u{FFFD}'));
    exec.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_run_hands_over_its_output_before_it_ends() {
    let exec = executor();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("go");
    dsh_test_support::tree::fifo(&fifo);
    // The command prints a line, then blocks until the test has seen that line.
    let command = format!("echo first; cat {}; echo last", fifo.display());
    let spec = exec.resolve(ShellExecRequest::new(command)).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let sink: dsh_shell::OutputSink = std::sync::Arc::new(move |bytes: &[u8]| {
        let _ = tx.send(bytes.to_vec());
    });
    let run = tokio::spawn({
        let exec = exec.clone();
        async move { exec.run_streaming(spec, sink).await }
    });
    let first = rx.recv().await.unwrap();
    assert_eq!(first, b"first\n");
    assert!(!run.is_finished(), "seen while the command still runs");
    std::fs::write(&fifo, b"middle\n").unwrap();
    let out = run.await.unwrap().unwrap();
    let mut streamed = first;
    while let Ok(piece) = rx.try_recv() {
        streamed.extend(piece);
    }
    assert_eq!(streamed, b"first\nmiddle\nlast\n");
    assert_eq!(
        &out.tail[..],
        b"first\nmiddle\nlast\n",
        "the result is the same"
    );
}
