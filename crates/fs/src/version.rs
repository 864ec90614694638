//! The version stamp of a file's text.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a reader saw: the SHA-256 of the text, in hex. A hash rather than a modification time,
/// so an editor's unsaved buffer has one too and a touch that changes nothing is no change.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Version(String);

impl Version {
    /// The version of `text`.
    pub fn of(text: &str) -> Version {
        let digest = Sha256::digest(text.as_bytes());
        let mut hex = String::with_capacity(64);
        for byte in digest {
            hex.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
            hex.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
        }
        Version(hex)
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_the_sha256_of_the_text() {
        assert_eq!(
            Version::of("").as_str(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_ne!(Version::of("a\n"), Version::of("a"));
    }
}
