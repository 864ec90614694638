//! Translation records: two blob ids, read line by line, never with
//! a YAML parser.

use sha1::{Digest, Sha1};

/// The git blob id of `bytes`: `sha1("blob " + len + "\0" + bytes)`, lowercase hex.
pub fn blob_id(bytes: &[u8]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {}\0", bytes.len()).as_bytes());
    hasher.update(bytes);
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The record's canonical bytes for the pair whose English path is `english`.
pub fn canonical(english: &str, english_id: &str, twin_id: &str) -> String {
    let base = basename(english);
    let twin_path = twin_of(english);
    let twin = basename(&twin_path);
    format!(
        "# dsh translation record: the two sides of this pair as last confirmed to agree.\n\
         # Each value is the git blob id of the exact file bytes; neither language outranks the other.\n\
         # After editing either side, bring the other along, then confirm again with:\n\
         #   cargo xtask i18n record {english}\n\
         {base}: {english_id}\n\
         {twin}: {twin_id}\n"
    )
}

/// The two recorded ids, or `None` when the record breaks its grammar.
pub fn parse(text: &str, english: &str) -> Option<(String, String)> {
    let base = basename(english);
    let twin_path = twin_of(english);
    let twin = basename(&twin_path);
    let (mut en, mut zh) = (None, None);
    for line in text.split('\n') {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once(": ")?;
        let key_ok = key.ends_with(".md") && !key.contains([':', '#', '/']) && !key.is_empty();
        let value_ok = value.len() == 40
            && value
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !key_ok || !value_ok {
            return None;
        }
        let slot = if key == base {
            &mut en
        } else if key == twin {
            &mut zh
        } else {
            return None;
        };
        if slot.replace(value.to_owned()).is_some() {
            return None;
        }
    }
    Some((en?, zh?))
}

/// `foo.md` → `foo.zh.md`.
pub fn twin_of(english: &str) -> String {
    format!("{}.zh.md", english.strip_suffix(".md").unwrap_or(english))
}

/// `foo.md` → `foo.i18n.yaml`.
pub fn record_of(english: &str) -> String {
    format!(
        "{}.i18n.yaml",
        english.strip_suffix(".md").unwrap_or(english)
    )
}

/// The last path segment.
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_ids_match_git() {
        assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
        assert_eq!(
            blob_id(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(
            blob_id(b"hello\r\n"),
            "ef0493b275aa2080237f676d2ef6559246f56636"
        );
    }

    #[test]
    fn records_round_trip_and_refuse_bad_grammar() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let text = canonical("notes/guide.md", &a, &b);
        assert_eq!(parse(&text, "notes/guide.md"), Some((a.clone(), b.clone())));
        let upper = text.replace(&a, &"A".repeat(40));
        assert_eq!(parse(&upper, "notes/guide.md"), None);
        let third = format!("{text}other.md: {a}\n");
        assert_eq!(parse(&third, "notes/guide.md"), None);
        let repeated = format!("guide.md: {a}\nguide.md: {a}\nguide.zh.md: {b}\n");
        assert_eq!(parse(&repeated, "notes/guide.md"), None);
        assert_eq!(parse(&format!("guide.md: {a}\n"), "notes/guide.md"), None);
    }
}
