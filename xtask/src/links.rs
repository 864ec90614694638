//! The `md-links` gate: every relative link, image and link-reference definition points
//! at a file of the repository, and a fragment into a Markdown file names one of its anchors.

use std::sync::LazyLock;

use percent_encoding::percent_decode_str;
use regex::Regex;

use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::md::LinkKind;
use crate::repo::Repo;
use crate::rfc::re;

static SCHEME: LazyLock<Regex> = LazyLock::new(|| re(r"^[A-Za-z][A-Za-z0-9+.-]*:"));

/// Runs the gate over the document set. Returns the diagnostics and the documents checked.
pub fn check(repo: &Repo) -> Result<(Vec<Diagnostic>, usize), XtaskError> {
    let mut out = Vec::new();
    let docs = repo.parsed_documents()?;
    for (path, doc) in &docs {
        for link in &doc.links {
            if matches!(link.kind, LinkKind::Reference | LinkKind::Autolink) {
                continue;
            }
            if let Some(message) = verdict(repo, path, &link.dest)? {
                out.push(Diagnostic::new(
                    message.0,
                    path.as_str(),
                    Some(link.line),
                    message.1,
                ));
            }
        }
    }
    Ok((out, docs.len()))
}

/// Resolves `target` (already split from its fragment) against the file `from`; `None` when
/// it leaves the root.
pub fn resolve(from: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = if let Some(abs) = target.strip_prefix('/') {
        return normalise(Vec::new(), abs);
    } else {
        from.split('/').collect()
    };
    parts.pop(); // the linking file's name
    normalise(parts, target)
}

fn normalise<'a>(mut parts: Vec<&'a str>, target: &'a str) -> Option<String> {
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// The rule and message for one destination, or `None` when it resolves.
fn verdict(repo: &Repo, from: &str, dest: &str) -> Result<Option<(Rule, String)>, XtaskError> {
    if SCHEME.is_match(dest) || dest.starts_with("//") {
        return Ok(None);
    }
    let (path, fragment) = dest.split_once('#').unwrap_or((dest, ""));
    let path = path.split('?').next().unwrap_or("");
    let decoded = percent_decode_str(path)
        .decode_utf8()
        .map(|c| c.into_owned())
        .unwrap_or_else(|_| path.to_owned());
    let target = if decoded.is_empty() {
        Some(from.to_owned())
    } else {
        resolve(from, &decoded)
    };
    let Some(target) = target.filter(|t| repo.exists(t)) else {
        return Ok(Some((
            Rule::LinksTarget,
            format!("link {dest:?} points at nothing in the repository"),
        )));
    };
    if fragment.is_empty() || !target.ends_with(".md") || repo.is_dir(&target) {
        return Ok(None);
    }
    let fragment = percent_decode_str(fragment)
        .decode_utf8()
        .map(|c| c.into_owned())
        .unwrap_or_else(|_| fragment.to_owned());
    Ok(anchor_missing(repo, &target, &fragment)?
        .map(|why| (Rule::LinksAnchor, format!("link {dest:?}: {why}"))))
}

/// Why `fragment` is no anchor of the Markdown file `target`, if it is not one.
pub fn anchor_missing(
    repo: &Repo,
    target: &str,
    fragment: &str,
) -> Result<Option<String>, XtaskError> {
    let name = target.rsplit('/').next().unwrap_or(target);
    Ok(match repo.markdown(target)? {
        Some((_, doc)) if doc.anchors.contains(fragment) => None,
        Some(_) => Some(format!("{name} has no heading or anchor {fragment:?}")),
        None => Some(format!(
            "{name} cannot be read as UTF-8, so anchor {fragment:?} cannot be found"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn resolution() {
        assert_eq!(resolve("a/b.md", "c.md").as_deref(), Some("a/c.md"));
        assert_eq!(resolve("a/b.md", "../c/d.md").as_deref(), Some("c/d.md"));
        assert_eq!(resolve("a/b.md", "/x/y.md").as_deref(), Some("x/y.md"));
        assert_eq!(resolve("a/b.md", "../../x.md"), None);
        assert_eq!(resolve("b.md", "./sub/").as_deref(), Some("sub"));
    }
}
