//! The local provider on real files in temporary directories.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use dsh_fs::{FileAccess, FsError, Version};
use dsh_fs_local::{LocalFiles, LocalFilesConfig, WriteOps};
use dsh_test_support::tree::write;

fn files() -> LocalFiles {
    LocalFiles::new(LocalFilesConfig::default())
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".dsh-"))
        .collect()
}

#[tokio::test]
async fn a_crlf_file_reads_as_lf_and_stays_crlf_and_the_final_newline_is_as_written() {
    let dir = tempfile::tempdir().unwrap();
    for (stored, edited, after) in [
        ("one\r\ntwo\r\n", "one\n2\n", "one\r\n2\r\n"),
        ("one\r\ntwo", "one\n2", "one\r\n2"),
        ("one\r\ntwo", "one\n2\n", "one\r\n2\r\n"),
        ("one\ntwo\n", "one\n2", "one\n2"),
        ("one\ntwo", "one\n2\n", "one\n2\n"),
        ("hi", "hi\n", "hi\n"),
    ] {
        let path = dir.path().join("f.txt");
        write(&path, stored);
        let file = files().read(&path).await.unwrap();
        assert!(!file.text.contains('\r'), "{stored:?}");
        let version = files()
            .write(&path, edited, Some(&file.version))
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), after, "{stored:?}");
        assert_eq!(files().read(&path).await.unwrap().version, version);
    }
}

#[tokio::test]
async fn a_write_keeps_the_mode_and_a_new_file_gets_the_umask_default() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("run.sh");
    write(&script, "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    let file = files().read(&script).await.unwrap();
    files()
        .write(&script, "#!/bin/sh\necho bye\n", Some(&file.version))
        .await
        .unwrap();
    let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o751);

    let fresh = dir.path().join("deep/new/dir/file.rs");
    files().write(&fresh, "fn main() {}\n", None).await.unwrap();
    assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "fn main() {}\n");
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode & 0o600,
        0o600,
        "readable and writable by its owner: {mode:o}"
    );
    assert_ne!(mode, 0o600, "not a private temp file's mode: {mode:o}");
}

#[tokio::test]
async fn a_stale_version_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.txt");
    write(&path, "before\n");
    let seen = files().read(&path).await.unwrap();
    write(&path, "someone else\n");
    let err = files()
        .write(&path, "mine\n", Some(&seen.version))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "stale");
    assert!(
        err.to_string().contains("changed since it was read"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "someone else\n");

    let err = files().write(&path, "mine\n", None).await.unwrap_err();
    assert!(err.to_string().contains("exists already"), "{err}");

    std::fs::remove_file(&path).unwrap();
    let err = files()
        .write(&path, "mine\n", Some(&seen.version))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no longer exists"), "{err}");
    assert!(!path.exists());
    assert!(leftovers(dir.path()).is_empty());
}

#[tokio::test]
async fn binary_and_oversized_files_are_refused_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    let nul = dir.path().join("a.bin");
    write(&nul, b"ELF\0\x01\x02");
    let err = files().read(&nul).await.unwrap_err();
    assert!(matches!(err, FsError::NotText { .. }), "{err}");
    assert!(err.to_string().contains("NUL byte"), "{err}");

    let latin1 = dir.path().join("latin1.txt");
    write(&latin1, b"caf\xe9\n");
    let err = files().read(&latin1).await.unwrap_err();
    assert!(err.to_string().contains("not UTF-8 at byte 3"), "{err}");

    let big = dir.path().join("big.txt");
    write(&big, "x".repeat(1025));
    let small = LocalFiles::new(LocalFilesConfig { read_cap: 1024 });
    let err = small.read(&big).await.unwrap_err();
    assert_eq!(
        err,
        FsError::TooLarge {
            path: big.clone(),
            size: 1025,
            cap: 1024
        }
    );
    assert_eq!(err.code(), "too_large");

    let err = files().read(dir.path()).await.unwrap_err();
    assert_eq!(err.code(), "is_directory");
    let err = files().read(&dir.path().join("missing")).await.unwrap_err();
    assert_eq!(err.code(), "not_found");
}

#[tokio::test]
async fn unicode_paths_and_text_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("文档/ファイル é.md");
    files().write(&path, "héllo 世界\n", None).await.unwrap();
    let file = files().read(&path).await.unwrap();
    assert_eq!(file.text, "héllo 世界\n");
    assert_eq!(file.version, Version::of("héllo 世界\n"));
}

#[tokio::test]
async fn writing_through_a_symlink_replaces_its_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.txt");
    let link = dir.path().join("link.txt");
    write(&real, "old\n");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let file = files().read(&link).await.unwrap();
    files()
        .write(&link, "new\n", Some(&file.version))
        .await
        .unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "new\n");
}

/// Fails the chosen step of the write path.
struct Failing(&'static str);

impl WriteOps for Failing {
    fn write(&self, file: &mut std::fs::File, bytes: &[u8]) -> io::Result<()> {
        if self.0 == "write" {
            // Half the bytes reach the temporary file first, as in a crash mid-write.
            std::io::Write::write_all(file, &bytes[..bytes.len() / 2])?;
            return Err(io::Error::other("injected: disk full"));
        }
        std::io::Write::write_all(file, bytes)
    }
    fn sync(&self, file: &std::fs::File) -> io::Result<()> {
        if self.0 == "sync" {
            return Err(io::Error::other("injected: fsync failed"));
        }
        file.sync_all()
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if self.0 == "rename" {
            return Err(io::Error::other("injected: crash before rename"));
        }
        std::fs::rename(from, to)
    }
}

#[tokio::test]
async fn a_failure_at_any_step_leaves_the_old_file_whole_and_no_temporary_file() {
    for step in ["write", "sync", "rename"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.txt");
        write(&path, "the old text\n");
        let failing = LocalFiles::with_ops(LocalFilesConfig::default(), Arc::new(Failing(step)));
        let seen = failing.read(&path).await.unwrap();
        let err = failing
            .write(&path, &"new ".repeat(1000), Some(&seen.version))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("injected"), "{step}: {err}");
        assert!(err.to_string().contains("kept.txt"), "{step}: {err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "the old text\n",
            "{step}"
        );
        assert!(leftovers(dir.path()).is_empty(), "{step}");
    }
}

#[tokio::test]
async fn a_file_that_is_not_text_cannot_be_overwritten_blind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.bin");
    write(&path, b"\0\0\0");
    let err = files()
        .write(&path, "text", Some(&Version::of("")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "not_text");
    assert_eq!(std::fs::read(&path).unwrap(), b"\0\0\0");
}

#[tokio::test]
async fn devices_and_fifos_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    dsh_test_support::tree::fifo(&fifo);
    for path in [fifo.as_path(), Path::new("/dev/zero")] {
        let err = files().read(path).await.unwrap_err();
        assert_eq!(err.code(), "not_text", "{path:?}");
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
}
