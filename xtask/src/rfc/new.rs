//! `rfc new`: a scaffold that conforms to the format in every respect but its
//! placeholders, so an unfilled scaffold cannot merge.

use super::format::PLACEHOLDER;
use super::{CLASSES, LIFECYCLES, RFC_ROOT, SLUG, required_sections, status_hint};
use crate::date::Date;
use crate::error::XtaskError;
use crate::repo::Repo;

/// What `rfc new` was asked for.
pub struct Request<'a> {
    /// `<lifecycle>/<class>/<slug>`.
    pub target: &'a str,
    pub title: &'a str,
    pub reason: Option<&'a str>,
    pub date: Option<&'a str>,
}

fn usage(message: String) -> XtaskError {
    XtaskError::Usage(message)
}

/// Validates the request and returns the new file's path and bytes.
pub fn scaffold(
    repo: &Repo,
    request: &Request,
    default_date: Date,
) -> Result<(String, String), XtaskError> {
    let parts: Vec<&str> = request.target.split('/').collect();
    let [lifecycle, class, slug] = parts[..] else {
        return Err(usage(format!(
            "rfc new: {:?} is not <lifecycle>/<class>/<slug>",
            request.target
        )));
    };
    if !LIFECYCLES.contains(&lifecycle) {
        return Err(usage(format!(
            "rfc new: {lifecycle:?} is no lifecycle; use one of {}",
            LIFECYCLES.join(", ")
        )));
    }
    if !CLASSES.contains(&class) {
        return Err(usage(format!(
            "rfc new: {class:?} is no class; use one of {}",
            CLASSES.join(", ")
        )));
    }
    if !SLUG.is_match(slug) {
        return Err(usage(format!(
            "rfc new: slug {slug:?} must be lowercase ASCII words joined by single hyphens"
        )));
    }
    let title = request.title;
    if title.is_empty() || title.contains(['\n', '\r']) || title.trim() != title {
        return Err(usage(
            "rfc new: --title must be one line without leading or trailing whitespace".into(),
        ));
    }
    let date = match request.date {
        Some(text) => {
            let date = Date::parse(text).map_err(|e| usage(format!("rfc new: --date: {e}")))?;
            if date > repo.today() {
                return Err(usage(format!(
                    "rfc new: --date {date} lies in the future (today is {})",
                    repo.today()
                )));
            }
            date
        }
        None => default_date,
    };
    let status = match (lifecycle, request.reason) {
        ("rejected", Some(reason))
            if !reason.contains(['\n', '\r']) && reason.trim() == reason && !reason.is_empty() =>
        {
            format!("Status: rejected — {reason}")
        }
        ("rejected", Some(_)) => {
            return Err(usage("rfc new: --reason must be one non-empty line".into()));
        }
        ("rejected", None) => {
            return Err(usage("rfc new: a rejected RFC needs --reason".into()));
        }
        (_, Some(_)) => {
            return Err(usage(format!(
                "rfc new: --reason is only for rejected RFCs, not {lifecycle}"
            )));
        }
        (_, None) => status_hint(lifecycle).to_owned(),
    };
    let path = format!("{RFC_ROOT}/{lifecycle}/{class}/{date}-{slug}.md");
    if repo.root().join(&path).exists() {
        return Err(usage(format!("rfc new: {path} already exists")));
    }
    let prefix = format!("{RFC_ROOT}/");
    if let Some(other) = repo.documents().find(|p| {
        p.starts_with(&prefix) && !p.ends_with(".zh.md") && {
            let name = p.rsplit('/').next().unwrap_or("");
            super::tree::split_name(name).is_some_and(|(_, used)| used == slug)
        }
    }) {
        return Err(usage(format!(
            "rfc new: slug {slug:?} is already used by {other}"
        )));
    }

    let mut lines = vec![
        format!("# RFC: {title}"),
        String::new(),
        status,
        String::new(),
    ];
    let sections =
        std::iter::once("## Problem").chain(required_sections(lifecycle).iter().copied());
    for section in sections {
        lines.push(section.to_owned());
        lines.push(String::new());
        lines.push(format!(
            "{PLACEHOLDER} replace with this section's text -->"
        ));
        lines.push(String::new());
    }
    lines.pop();
    let mut text = lines.join("\n");
    text.push('\n');
    Ok((path, text))
}
