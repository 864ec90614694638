//! One source of the system text: reading it within bounds and describing it for the record.

use std::io::Read;
use std::path::Path;

use dsh_agent::record::{InstructionSource, SourceKind};
use sha2::{Digest, Sha256};

/// How deep one file is read: enough for any instruction file, and a bound on a mistake
/// (a log file named `AGENTS.md`).
pub(crate) const READ_LIMIT: u64 = 1024 * 1024;

/// The lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A file's head (at most [`READ_LIMIT`] bytes) and its whole length.
pub(crate) struct FileHead {
    pub(crate) bytes: Vec<u8>,
    pub(crate) len: u64,
}

pub(crate) fn read_bounded(path: &Path) -> std::io::Result<FileHead> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut bytes = Vec::with_capacity(usize::try_from(len.min(READ_LIMIT)).unwrap_or(0));
    file.take(READ_LIMIT).read_to_end(&mut bytes)?;
    Ok(FileHead {
        len: len.max(bytes.len() as u64),
        bytes,
    })
}

/// The record's entry for `bytes` read from `path`.
pub(crate) fn describe(kind: SourceKind, path: &str, bytes: &[u8], len: u64) -> InstructionSource {
    InstructionSource {
        kind,
        path: path.to_owned(),
        sha256: sha256_hex(bytes),
        bytes: len,
        truncated: false,
        skipped: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_in_lowercase_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
