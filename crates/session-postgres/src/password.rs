//! The password libpq would use when the connection string has none: `PGPASSWORD`, else the
//! first matching line of the password file (`PGPASSFILE`, else `~/.pgpass`), which libpq
//! ignores unless only its owner can read it. tokio-postgres reads neither, and no
//! maintained crate does just this, so it is here (the format is five fields a line).

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// The password for `user` at `host:port/database`, when one is configured. A Unix socket's
/// directory also matches a line for `localhost`, as libpq has it for its socket.
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
    find(&text, host, &port.to_string(), database, user)
}

/// The password of the first line of `text` that matches.
fn find(text: &str, host: &str, port: &str, database: &str, user: &str) -> Option<String> {
    let socket = host.starts_with('/');
    let matches = |field: &str, want: &str| field == "*" || field == want;
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(fields)
        .find(|f| {
            (matches(&f[0], host) || (socket && f[0] == "localhost"))
                && matches(&f[1], port)
                && matches(&f[2], database)
                && matches(&f[3], user)
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
    use super::{fields, find};

    #[test]
    fn the_first_matching_line_gives_the_password_and_a_socket_matches_localhost() {
        let text = "# team\nother:5432:*:ana:no\ndb.example:*:team:ana:tcp\nlocalhost:5432:team:ana:sock\n";
        assert_eq!(
            find(text, "db.example", "6432", "team", "ana").as_deref(),
            Some("tcp")
        );
        assert_eq!(
            find(text, "/run/postgresql", "5432", "team", "ana").as_deref(),
            Some("sock")
        );
        assert_eq!(find(text, "db.example", "5432", "team", "bob"), None);
    }

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
