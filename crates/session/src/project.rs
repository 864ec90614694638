//! Which project a session belongs to, so that sessions follow the project and not the path:
//! inside a git repository, its remote's URL (normalised: `git@github.com:org/app.git` and
//! `https://github.com/org/app` are both `github.com/org/app`) and the path within the
//! repository; outside one, or in a repository without a remote, the absolute path. Two
//! clones of one repository, on one machine or two, are one project.
//!
//! Read from the repository's own files (`.git`, a worktree's `gitdir:` file, `config`),
//! never by running git: a listing asks this of every directory it filters by.

use std::path::{Path, PathBuf};

/// The project of the directory `cwd` (absolute).
pub fn project_of(cwd: &Path) -> String {
    for dir in cwd.ancestors() {
        let dot_git = dir.join(".git");
        let Some(git_dir) = git_dir(&dot_git) else {
            continue;
        };
        let Some(remote) = remote_url(&git_dir) else {
            break;
        };
        let within = cwd.strip_prefix(dir).unwrap_or(Path::new(""));
        return format!("{}:{}", normalise(&remote), within.display());
    }
    cwd.display().to_string()
}

/// The repository's git directory for a `.git` entry: the directory itself, or the one a
/// worktree's `.git` file names (whose `commondir` holds the shared config).
fn git_dir(dot_git: &Path) -> Option<PathBuf> {
    if dot_git.is_dir() {
        return Some(dot_git.to_path_buf());
    }
    let text = std::fs::read_to_string(dot_git).ok()?;
    let named = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
    let dir = match named.is_absolute() {
        true => named,
        false => dot_git.parent()?.join(named),
    };
    match std::fs::read_to_string(dir.join("commondir")) {
        Ok(common) => Some(dir.join(common.trim())),
        Err(_) => Some(dir),
    }
}

/// The URL of the remote `origin`, else of the first remote, in `<git_dir>/config`.
fn remote_url(git_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(git_dir.join("config")).ok()?;
    let mut section = String::new();
    let mut first: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_owned();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "url" || !section.starts_with("remote ") {
            continue;
        }
        let url = value.trim().trim_matches('"').to_owned();
        if section == "remote \"origin\"" {
            return Some(url);
        }
        first.get_or_insert(url);
    }
    first
}

/// `host/path` of a remote URL: scheme, user and `.git` dropped, the host lower-cased.
fn normalise(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((_, rest)) => (true, rest),
        None => (false, url),
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, rest)| rest);
    // With a scheme the host ends at the first `/` (a `:port` after it is how to reach it,
    // not what it is); without one, `host:path` is git's scp-like form.
    let split = match scheme {
        true => rest.find('/'),
        false => rest.find(':').or_else(|| rest.find('/')),
    };
    let (host, path) = match split {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, ""),
    };
    let host = host.split(':').next().unwrap_or(host).to_lowercase();
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    format!("{host}/{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_of_writing_a_remote_names_one_repository() {
        for url in [
            "git@github.com:org/app.git",
            "https://github.com/org/app",
            "https://ana@GitHub.com/org/app.git/",
            "ssh://git@github.com:22/org/app.git",
        ] {
            assert_eq!(normalise(url), "github.com/org/app", "{url}");
        }
    }

    #[test]
    fn two_clones_are_one_project_and_a_directory_outside_git_is_its_path() {
        let root = std::env::temp_dir().join(format!("dsh-project-{}", std::process::id()));
        let config = "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://x.org/fork\n\
                      [remote \"origin\"]\n\turl = git@github.com:org/app.git\n";
        for clone in ["one", "two"] {
            std::fs::create_dir_all(root.join(clone).join(".git")).unwrap();
            std::fs::create_dir_all(root.join(clone).join("src")).unwrap();
            std::fs::write(root.join(clone).join(".git/config"), config).unwrap();
        }
        let one = project_of(&root.join("one/src"));
        assert_eq!(one, "github.com/org/app:src");
        assert_eq!(project_of(&root.join("two/src")), one);
        assert_eq!(project_of(&root.join("two")), "github.com/org/app:");
        let outside = root.join("elsewhere");
        assert_eq!(project_of(&outside), outside.display().to_string());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
