//! The repository a command works on: its root, today, the file index every gate reads, and a cache that
//! reads every file at most once and parses every Markdown file at most once.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::cargo::relative;
use crate::date::Date;
use crate::error::XtaskError;
use crate::md::{self, Doc};

/// Fixture trees hold deliberate violations; they are indexed (links may point at them) but
/// never scanned.
const FIXTURES: &str = "xtask/tests/fixtures/";

/// An opened repository.
pub struct Repo {
    root: PathBuf,
    today: Date,
    /// Every indexed path, files and directories (directories without a trailing `/`).
    index: BTreeSet<String>,
    /// The indexed regular files (not symlinks, not directories).
    files: BTreeSet<String>,
    dirs: BTreeSet<String>,
    /// Paths whose name is not UTF-8, shown lossily; neither indexed nor walked into.
    unnamed: BTreeSet<String>,
    cache: Mutex<HashMap<String, Loaded>>,
}

/// A Markdown file's text and its one parse.
pub type Parsed = (Arc<str>, Arc<Doc>);

/// A file's contents as the gates see them.
#[derive(Clone)]
pub enum Text {
    /// Valid UTF-8.
    Utf8(Arc<str>),
    /// Not UTF-8: `files/not-utf8` reports it and every other gate skips it.
    NotUtf8,
}

#[derive(Clone)]
struct Loaded {
    text: Text,
    doc: Option<Arc<Doc>>,
}

impl Repo {
    /// Opens the repository at `root` and walks it: every path except `.git/`,
    /// `target/` at any depth and `.gitignore`d paths; hidden paths included; symlinks not
    /// followed (a symlink counts as present when its target exists).
    pub fn open(root: &Path, today: Date) -> Result<Repo, XtaskError> {
        if !root.is_dir() {
            return Err(XtaskError::Usage(format!(
                "--root {}: not an existing directory",
                root.display()
            )));
        }
        let mut index = BTreeSet::new();
        let mut files = BTreeSet::new();
        let mut dirs = BTreeSet::new();
        let mut unnamed = BTreeSet::new();
        let walk = ignore::WalkBuilder::new(root)
            .hidden(false)
            .parents(false)
            .ignore(false)
            .git_global(false)
            .git_exclude(false)
            .require_git(false)
            .git_ignore(true)
            .follow_links(false)
            .filter_entry(|e| {
                let name = e.file_name();
                !(e.depth() > 0
                    && e.file_type().is_some_and(|t| t.is_dir())
                    && (name == ".git" || name == "target"))
            })
            .build();
        for entry in walk {
            let entry = entry.map_err(|e| XtaskError::Io {
                path: root.display().to_string(),
                source: std::io::Error::other(e.to_string()),
            })?;
            if entry.depth() == 0 {
                continue;
            }
            let rel = relative(root, entry.path());
            // A name that is not UTF-8 cannot be named in a diagnostic or reopened from its
            // lossy form: report the outermost such path once, and look no further inside.
            if entry.path().to_str().is_none() {
                let parent_named = entry.path().parent().is_none_or(|p| p.to_str().is_some());
                if parent_named {
                    unnamed.insert(rel);
                }
                continue;
            }
            let Some(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                if std::fs::metadata(entry.path()).is_ok() {
                    index.insert(rel);
                }
            } else if kind.is_dir() {
                dirs.insert(rel.clone());
                index.insert(rel);
            } else {
                files.insert(rel.clone());
                index.insert(rel);
            }
        }
        Ok(Repo {
            root: root.to_path_buf(),
            today,
            index,
            files,
            dirs,
            unnamed,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The date taken as today (`XTASK_TODAY`, else today in UTC+14).
    pub fn today(&self) -> Date {
        self.today
    }

    /// Paths (shown lossily) whose name is not UTF-8, outermost only; every gate skips them.
    pub fn unnamed(&self) -> impl Iterator<Item = &str> {
        self.unnamed
            .iter()
            .map(String::as_str)
            .filter(|p| !p.starts_with(FIXTURES))
    }

    /// True when `path` (root-relative, no trailing `/`) is in the file index.
    pub fn exists(&self, path: &str) -> bool {
        path.is_empty() || self.index.contains(path.trim_end_matches('/'))
    }

    /// True when `path` is an indexed directory.
    pub fn is_dir(&self, path: &str) -> bool {
        self.dirs.contains(path.trim_end_matches('/'))
    }

    /// The scanned regular files (index minus fixtures), sorted.
    pub fn scanned_files(&self) -> impl Iterator<Item = &str> {
        self.files
            .iter()
            .map(String::as_str)
            .filter(|p| !p.starts_with(FIXTURES))
    }

    /// The scanned directories, sorted.
    pub fn scanned_dirs(&self) -> impl Iterator<Item = &str> {
        self.dirs
            .iter()
            .map(String::as_str)
            .filter(|p| !format!("{p}/").starts_with(FIXTURES))
    }

    /// The document set: scanned regular files ending in `.md`.
    pub fn documents(&self) -> impl Iterator<Item = &str> {
        self.scanned_files().filter(|p| p.ends_with(".md"))
    }

    /// Every document that is valid UTF-8, with its parse, in path order.
    pub fn parsed_documents(&self) -> Result<Vec<(String, Arc<Doc>)>, XtaskError> {
        let paths: Vec<String> = self.documents().map(str::to_owned).collect();
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            if let Some((_, doc)) = self.markdown(&path)? {
                out.push((path, doc));
            }
        }
        Ok(out)
    }

    /// True when `path` is a scanned regular file.
    pub fn is_scanned_file(&self, path: &str) -> bool {
        self.files.contains(path) && !path.starts_with(FIXTURES)
    }

    /// The text of an indexed file, read once.
    pub fn text(&self, path: &str) -> Result<Text, XtaskError> {
        Ok(self.load(path, false)?.text)
    }

    /// The text of a file as UTF-8, or empty when it is not UTF-8 (for gates that only look
    /// for content and report its absence, such as the crate-root documentation).
    pub fn text_or_empty(&self, path: &str) -> Result<Arc<str>, XtaskError> {
        Ok(match self.text(path)? {
            Text::Utf8(text) => text,
            Text::NotUtf8 => Arc::from(""),
        })
    }

    /// The UTF-8 text and the parsed Markdown of a file, each computed once; `None` when the
    /// file is not UTF-8.
    pub fn markdown(&self, path: &str) -> Result<Option<Parsed>, XtaskError> {
        let loaded = self.load(path, true)?;
        Ok(match (loaded.text, loaded.doc) {
            (Text::Utf8(text), Some(doc)) => Some((text, doc)),
            _ => None,
        })
    }

    fn load(&self, path: &str, parse: bool) -> Result<Loaded, XtaskError> {
        let cached = self.lock().get(path).cloned();
        let mut loaded = match cached {
            Some(loaded) => loaded,
            None => {
                let bytes =
                    std::fs::read(self.root.join(path)).map_err(|e| XtaskError::io(path, e))?;
                let text = match String::from_utf8(bytes) {
                    Ok(s) => Text::Utf8(s.into()),
                    Err(_) => Text::NotUtf8,
                };
                Loaded { text, doc: None }
            }
        };
        if parse
            && loaded.doc.is_none()
            && let Text::Utf8(text) = &loaded.text
        {
            loaded.doc = Some(Arc::new(md::parse(text)));
        }
        self.lock().insert(path.to_owned(), loaded.clone());
        Ok(loaded)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Loaded>> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
