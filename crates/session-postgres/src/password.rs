//! The password libpq would use when the connection string has none: `PGPASSWORD`, else the
//! first matching line of the password file (`PGPASSFILE`, else `~/.pgpass`), which libpq
//! ignores unless only its owner can read it. tokio-postgres reads neither, and no
//! maintained crate does just this, so it is here (the format is five fields a line).

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// The password for `user` at `host:port/database`, when one is configured.
pub(crate) fn lookup(host: &str, port: u16, database: &str, user: &str) -> Option<String> {
    if let Ok(password) = std::env::var("PGPASSWORD") {
        return Some(password);
    }
    let path = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pgpass")))?;
    let meta = std::fs::metadata(&path).ok()?;
    if meta.mode() & 0o077 != 0 {
        tracing::warn!(
            file = %path.display(),
            "the password file is readable by others; ignored, as libpq does"
        );
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let port = port.to_string();
    let wanted = [host, port.as_str(), database, user];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(fields)
        .find(|fields| {
            fields[..4]
                .iter()
                .zip(wanted)
                .all(|(field, want)| field == "*" || field == want)
        })
        .map(|mut fields| fields.swap_remove(4))
}

/// A line's five fields, `\:` and `\\` unescaped; `None` for a line of another shape.
fn fields(line: &str) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.last_mut()?.push(chars.next().unwrap_or('\\')),
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut()?.push(c),
        }
    }
    (out.len() == 5).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::fields;

    #[test]
    fn a_line_splits_into_five_fields_with_escapes_kept_as_text() {
        assert_eq!(
            fields("db.example:5432:*:ana:p\\:ss:word"),
            Some(vec![
                "db.example".into(),
                "5432".into(),
                "*".into(),
                "ana".into(),
                "p:ss:word".into()
            ])
        );
        assert_eq!(fields("only:three:fields"), None);
    }
}
