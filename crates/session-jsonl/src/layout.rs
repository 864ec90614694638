//! Where logs live: `<root>/<project>/<file>`, names derived from the working
//! directory and the id so that they are injective, readable, never hidden and at most 255
//! bytes.

use sha2::{Digest, Sha256};

fn hex(bytes: &[u8], digits: usize) -> String {
    bytes
        .iter()
        .flat_map(|b| [b >> 4, b & 0xf])
        .take(digits)
        .map(|n| char::from_digit(u32::from(n), 16).unwrap_or('0'))
        .collect()
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    Sha256::digest(bytes).to_vec()
}

/// The project directory name of a normalized `cwd`.
pub fn project_dir(cwd: &str) -> String {
    let mut name = String::new();
    let mut in_run = false;
    for b in cwd.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            name.push(char::from(b));
            in_run = false;
        } else if !in_run {
            name.push('-');
            in_run = true;
        }
    }
    let trim = |s: &str| s.trim_matches(|c| c == '-' || c == '.').to_owned();
    let mut name = trim(&name);
    if name.len() > 48 {
        name = trim(&name[name.len() - 48..]);
    }
    if name.is_empty() {
        name = "root".into();
    }
    format!("{name}-{}", hex(&sha256(cwd.as_bytes()), 12))
}

/// The file name of a session id.
pub fn file_name(id: &str) -> String {
    let mut encoded = String::new();
    for (i, b) in id.bytes().enumerate() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0) {
            encoded.push(char::from(b));
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    if encoded.len() > 200 {
        // Never split a `%XX` escape: back up when a `%` sits one or two bytes before the cut.
        let bytes = encoded.as_bytes();
        let cut = match (bytes[148], bytes[149]) {
            (_, b'%') => 149,
            (b'%', _) => 148,
            _ => 150,
        };
        encoded = format!("{}~{}", &encoded[..cut], hex(&sha256(id.as_bytes()), 16));
    }
    format!("{encoded}.jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_names() {
        let app = project_dir("/home/ana/src/app");
        assert!(app.starts_with("home-ana-src-app-"), "{app}");
        assert_eq!(app.len(), "home-ana-src-app-".len() + 12);
        assert!(project_dir("/").starts_with("root-"));
        let long = format!("/{}", "x".repeat(300));
        assert!(project_dir(&long).len() <= 48 + 13);
        assert_ne!(project_dir("/a/b"), project_dir("/a-b"));
        assert!(project_dir("/home/ünï").starts_with("home-"));
    }

    #[test]
    fn file_names_are_injective_and_never_hidden() {
        assert_eq!(file_name("."), "%2E.jsonl");
        assert_eq!(file_name(".."), "%2E..jsonl");
        assert_eq!(file_name("%"), "%25.jsonl");
        assert_ne!(file_name("A"), file_name("a"));
        let long: String = "é".repeat(64);
        let name = file_name(&long);
        assert!(name.len() <= 255, "{}", name.len());
        assert!(!name.starts_with('.'));
        assert!(name.contains('~'));
    }
}
