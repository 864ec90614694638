//! `grep`: a regex search over files with ripgrep's crates.

use std::io;
use std::path::{Path, PathBuf};

use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_tools::words::count;
use dsh_tools::{
    Effect, Roots, Tool, ToolCallView, ToolContext, ToolError, ToolOutput, ToolResultView,
    ToolSchema,
};
use futures::future::BoxFuture;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use parking_lot::Mutex;
use serde_json::json;

use crate::args::{self, GrepArgs};
use crate::config::ToolFsConfig;
use crate::errors::invalid;
use crate::listing::{relative, search_root, walker};
use crate::present;
use crate::stop::{Stop, Stopped, Watched};

/// Characters of a matching line shown before it is cut.
const LINE_CHARS: usize = 500;
/// The most context lines around a match.
const MAX_CONTEXT: usize = 20;
/// The largest `limit` a call may ask for.
const MAX_LIMIT: usize = 5000;
/// The most memory a compiled pattern may take (the regex crate's own default; ripgrep's is
/// ten times more). A model's `((a{100}){100}){100}` is refused at once instead of taking a
/// gigabyte and a minute.
const REGEX_SIZE_LIMIT: usize = 10 << 20;
/// The most memory a search thread's lazy DFA may cache; past it the cache is cleared.
const DFA_SIZE_LIMIT: usize = 16 << 20;

/// The `grep` tool.
pub(crate) struct GrepTool {
    pub config: ToolFsConfig,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Content,
    Files,
    Count,
}

/// What one file gave.
struct Found {
    path: PathBuf,
    shown: String,
    matches: usize,
    lines: Vec<String>,
}

impl Tool for GrepTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: "grep".into(),
            description: format!(
                "Search file contents with a regular expression (Rust regex syntax, as ripgrep). Honours .gitignore and skips hidden and binary files. output_mode: \"content\" (default) gives `path:line:text`, \"files_with_matches\" the paths, \"count\" matches per file. At most {} lines unless you set limit. Prefer this to grep or rg in bash.",
                self.config.grep_limit
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression."},
                    "path": {"type": "string", "description": "A file or directory to search (default: the working directory)."},
                    "glob": {"type": "string", "description": "Only files matching this glob, e.g. \"*.rs\" or \"src/**/*.ts\"."},
                    "type": {"type": "string", "description": "Only files of this type, e.g. \"rust\", \"py\", \"js\"."},
                    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
                    "case_insensitive": {"type": "boolean"},
                    "context": {"type": "integer", "minimum": 1, "description": "Lines of context before and after each match (content mode)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "The most lines to return."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    fn name(&self) -> String {
        "grep".into()
    }

    fn effect(&self, args: &serde_json::Value, roots: &Roots) -> Effect {
        crate::write::read_effect_of(args, roots)
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn call(
        &self,
        args: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let config = self.config.clone();
        Box::pin(async move {
            let args: GrepArgs = args::parse(args)?;
            args::non_empty("pattern", &args.pattern)?;
            let mode = match args.output_mode.as_deref() {
                None | Some("content") => Mode::Content,
                Some("files_with_matches") => Mode::Files,
                Some("count") => Mode::Count,
                Some(other) => {
                    return Err(invalid(format!(
                        "invalid output_mode {other:?}: expected content, files_with_matches or count"
                    )));
                }
            };
            let context = args::count("context", args.context, MAX_CONTEXT)?.unwrap_or(0);
            let limit = args::count("limit", args.limit, MAX_LIMIT)?.unwrap_or(config.grep_limit);
            let root = search_root(&cx, args.path.as_deref())?;
            if !root.exists() {
                return Err(ToolError::new(
                    "not_found",
                    format!(
                        "{} does not exist. Check the path with `glob`.",
                        root.display()
                    ),
                ));
            }
            let matcher = matcher(&args.pattern, args.case_insensitive)?;
            let mut walk = walker(&root);
            if let Some(glob) = &args.glob {
                let mut globs = OverrideBuilder::new(&root);
                globs
                    .add(glob)
                    .map_err(|e| invalid(format!("invalid glob {glob:?}: {e}")))?;
                walk.overrides(
                    globs
                        .build()
                        .map_err(|e| invalid(format!("invalid glob {glob:?}: {e}")))?,
                );
            }
            if let Some(name) = &args.file_type {
                let mut types = TypesBuilder::new();
                types.add_defaults();
                types.select(name);
                walk.types(
                    types
                        .build()
                        .map_err(|e| invalid(format!("invalid type {name:?}: {e}")))?,
                );
            }
            let cwd = cx.session_cwd().map(Path::to_path_buf);
            let stop = Stop::new(cx.cancellation().clone(), config.search_timeout);
            let (found, stopped) = tokio::task::spawn_blocking(move || {
                let found = search(walk, matcher, mode, context, limit, cwd.as_deref(), &stop);
                (found, stop.now())
            })
            .await
            .map_err(|e| ToolError::new("internal", format!("the search did not finish: {e}")))?;
            match stopped {
                Some(Stopped::Cancelled) => Err(ToolError::new(
                    "cancelled",
                    Stopped::Cancelled.note("search"),
                )),
                Some(out_of_time @ Stopped::OutOfTime(_)) => {
                    let mut output = report(found, mode, limit, &args.pattern, context > 0);
                    output.content.push('\n');
                    output.content.push_str(&out_of_time.note("search"));
                    Ok(output)
                }
                None => Ok(report(found, mode, limit, &args.pattern, context > 0)),
            }
        })
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        present::search_call(call, "grep")
    }

    fn present_result(
        &self,
        call: &ToolCallRecord,
        result: &ToolResultRecord,
    ) -> Option<ToolResultView> {
        present::found_result(call, result)
    }
}

/// The compiled pattern, within the size limits; a pattern over them is refused with the
/// limit it passed.
fn matcher(pattern: &str, case_insensitive: bool) -> Result<grep_regex::RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| {
            let message = e.to_string();
            if message.contains("exceeds size limit") {
                invalid(format!(
                    "the pattern is too large: compiled, it passes the {} MiB limit for one search's regex. Use a simpler pattern (smaller counted repetitions such as {{100}}, narrower classes than \\w).",
                    REGEX_SIZE_LIMIT >> 20
                ))
            } else {
                invalid(format!("invalid pattern: {message}"))
            }
        })
}

/// Walks in parallel and searches each file, until `stop` says so; returns what matched,
/// sorted by path.
fn search(
    walk: ignore::WalkBuilder,
    matcher: grep_regex::RegexMatcher,
    mode: Mode,
    context: usize,
    limit: usize,
    cwd: Option<&Path>,
    stop: &Stop,
) -> Vec<Found> {
    let found = Mutex::new(Vec::new());
    walk.build_parallel().run(|| {
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(if mode == Mode::Content { context } else { 0 })
            .after_context(if mode == Mode::Content { context } else { 0 })
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let found = &found;
        Box::new(move |entry| {
            if stop.now().is_some() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let shown = relative(entry.path(), cwd).display().to_string();
            let mut sink = Collect {
                shown: shown.clone(),
                mode,
                cap: limit + 1,
                matches: 0,
                lines: Vec::new(),
                stop,
            };
            if search_one(&mut searcher, &matcher, entry.path(), &mut sink).is_ok()
                && sink.matches > 0
            {
                found.lock().push(Found {
                    path: entry.path().to_path_buf(),
                    shown,
                    matches: sink.matches,
                    lines: sink.lines,
                });
            }
            WalkState::Continue
        })
    });
    let mut found = found.into_inner();
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// Searches one file through a [`Watched`] reader, so a stop reaches inside it.
fn search_one(
    searcher: &mut Searcher,
    matcher: &grep_regex::RegexMatcher,
    path: &Path,
    sink: &mut Collect,
) -> io::Result<()> {
    let file = std::fs::File::open(path)?;
    let reader = Watched {
        inner: file,
        stop: sink.stop,
    };
    searcher.search_reader(matcher, reader, sink)
}

/// Collects one file's matching (and context) lines.
struct Collect<'a> {
    shown: String,
    mode: Mode,
    cap: usize,
    matches: usize,
    lines: Vec<String>,
    stop: &'a Stop,
}

impl Collect<'_> {
    fn push(&mut self, sep: char, number: Option<u64>, bytes: &[u8]) {
        if self.mode != Mode::Content || self.lines.len() >= self.cap {
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text = match text.char_indices().nth(LINE_CHARS) {
            Some((at, _)) => format!("{}…", &text[..at]),
            None => text.to_owned(),
        };
        self.lines.push(format!(
            "{}{sep}{}{sep}{text}",
            self.shown,
            number.unwrap_or(0)
        ));
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        self.push(':', found.line_number(), found.bytes());
        // One match is enough to list the file; a stopped search takes no more.
        Ok(self.mode != Mode::Files && self.stop.now().is_none())
    }

    fn context(&mut self, _: &Searcher, line: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.push('-', line.line_number(), line.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.mode == Mode::Content && self.lines.len() < self.cap {
            self.lines.push("--".into());
        }
        Ok(true)
    }
}

/// The model's answer: the lines, paths or counts, capped with a note.
fn report(
    found: Vec<Found>,
    mode: Mode,
    limit: usize,
    pattern: &str,
    with_context: bool,
) -> ToolOutput {
    let files = found.len();
    let matches: usize = found.iter().map(|f| f.matches).sum();
    let summary = format!(
        "grep {pattern}: {} in {}",
        count(matches, "match", "matches"),
        count(files, "file", "files")
    );
    if files == 0 {
        return ToolOutput {
            content: format!("No matches for {pattern:?}."),
            is_error: false,
            meta: Some(json!({"summary": summary})),
        };
    }
    let mut lines: Vec<String> = match mode {
        Mode::Content => {
            let mut out: Vec<String> = Vec::new();
            for file in &found {
                // With context, files' groups are apart as ripgrep's are.
                if with_context && out.last().is_some_and(|l| l != "--") {
                    out.push("--".into());
                }
                out.extend(file.lines.iter().cloned());
            }
            while out.last().is_some_and(|l| l == "--") {
                out.pop();
            }
            out
        }
        Mode::Files => found.iter().map(|f| f.shown.clone()).collect(),
        Mode::Count => found
            .iter()
            .map(|f| format!("{}:{}", f.shown, f.matches))
            .collect(),
    };
    let total = lines.len();
    if total > limit {
        lines.truncate(limit);
        lines.push(format!(
            "[Showing {limit} of {total}+ lines ({} in {}). Narrow with path, glob or type, or a more specific pattern.]",
            count(matches, "match", "matches"),
            count(files, "file", "files")
        ));
    }
    ToolOutput {
        content: lines.join("\n"),
        is_error: false,
        meta: Some(json!({"summary": summary})),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use dsh_kernel::CancellationToken;

    use super::*;

    /// An endless file of lines, every tenth one matching, that cancels the search itself
    /// after `cancel_after` reads: a cancel arriving while one long file is searched.
    struct Endless {
        reads: usize,
        cancel_after: usize,
        cancel: CancellationToken,
    }

    impl io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            if self.reads == self.cancel_after {
                self.cancel.cancel();
            }
            let block = b"plain line\nplain line\nplain line\nplain line\nneedle line\n";
            let n = buf.len().min(block.len());
            buf[..n].copy_from_slice(&block[..n]);
            Ok(n)
        }
    }

    #[test]
    fn a_cancel_stops_the_search_inside_a_file_that_never_ends() {
        // A pattern that never matches is stopped by the reader; one that matches, at its
        // next match. Either way the search returns, keeping what it found.
        for (pattern, found) in [("absent", false), ("needle", true)] {
            let cancel = CancellationToken::new();
            let stop = Stop::new(cancel.clone(), Duration::from_secs(3600));
            let endless = Endless {
                reads: 0,
                cancel_after: 1000,
                cancel,
            };
            let mut searcher = SearcherBuilder::new().line_number(true).build();
            let mut sink = Collect {
                shown: "endless".into(),
                mode: Mode::Count,
                cap: 10,
                matches: 0,
                lines: Vec::new(),
                stop: &stop,
            };
            let matcher = matcher(pattern, false).unwrap();
            let reader = Watched {
                inner: endless,
                stop: &stop,
            };
            let result = searcher.search_reader(&matcher, reader, &mut sink);
            assert_eq!(result.is_err(), !found, "{pattern}: {result:?}");
            assert_eq!(sink.matches > 0, found, "{pattern}");
            assert_eq!(stop.now(), Some(Stopped::Cancelled));
        }
    }

    #[test]
    fn a_pattern_past_the_size_limit_is_refused_naming_the_limit() {
        let err = matcher("((a{100}){100}){100}", false).unwrap_err();
        assert_eq!(err.code, dsh_tools::codes::INVALID_ARGUMENTS);
        assert!(err.message.contains("10 MiB limit"), "{err}");
        let err = matcher("(unclosed", false).unwrap_err();
        assert!(err.message.starts_with("invalid pattern:"), "{err}");
    }
}
