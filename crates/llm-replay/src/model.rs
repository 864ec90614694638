//! `ReplayModel`: serves script entries as model streams, first
//! matching unconsumed entry per call, with delays, hangs and errors driven by the tokio clock.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;

use dsh_llm::{
    CancellationToken, Message, Model, ModelError, ModelErrorKind, ModelEvent, ModelInfo,
    ModelRequest, ModelStream,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::json;

use crate::script::{Ending, Entry, ItemKind, Matcher, ReplayScript};

/// A model that plays a script. Always labelled replay.
pub struct ReplayModel {
    script: ReplayScript,
    info: ModelInfo,
    state: Mutex<State>,
    call_log: Option<PathBuf>,
    /// Whether each request is kept for [`ReplayModel::requests`]. Off by default: a request
    /// holds the whole history, so keeping every one grows with the square of a run's length.
    record_requests: bool,
}

#[derive(Default)]
struct State {
    consumed: Vec<bool>,
    calls: usize,
    requests: Vec<ModelRequest>,
}

fn last_user(request: &ModelRequest) -> Option<&str> {
    request.messages.iter().rev().find_map(|m| match m {
        Message::User { content } => Some(content.as_str()),
        _ => None,
    })
}

fn text_of(message: &Message) -> &str {
    match message {
        Message::System { content } | Message::User { content } => content,
        Message::Assistant { content, .. } | Message::Tool { content, .. } => content,
    }
}

impl Matcher {
    fn accepts(&self, request: &ModelRequest) -> bool {
        self.session_id
            .as_ref()
            .is_none_or(|id| request.session_id.as_ref() == Some(id))
            && self.last_user_contains.as_ref().is_none_or(|needle| {
                last_user(request).is_some_and(|u| u.contains(needle.as_str()))
            })
            && self.any_contains.as_ref().is_none_or(|needle| {
                request
                    .messages
                    .iter()
                    .any(|m| text_of(m).contains(needle.as_str()))
            })
    }
}

impl ReplayModel {
    /// A model playing `script`.
    pub fn new(script: ReplayScript) -> ReplayModel {
        let info = ModelInfo {
            provider: "replay".into(),
            model: format!("replay:{}", script.name),
            endpoint: None,
            replay: true,
        };
        let consumed = vec![false; script.entries.len()];
        ReplayModel {
            script,
            info,
            state: Mutex::new(State {
                consumed,
                ..State::default()
            }),
            call_log: None,
            record_requests: false,
        }
    }

    /// Keeps a copy of every request, for tests that assert what the agent sent.
    pub fn with_recorded_requests(mut self) -> ReplayModel {
        self.record_requests = true;
        self
    }

    /// Appends one JSON line per call to `path` (the CLI sets it from `DSH_REPLAY_LOG`).
    pub fn with_call_log(mut self, path: impl Into<PathBuf>) -> ReplayModel {
        self.call_log = Some(path.into());
        self
    }

    /// How many calls were made.
    pub fn calls(&self) -> usize {
        self.state.lock().calls
    }

    /// Copies of the requests received, for asserting what the agent sent; empty unless the
    /// model was built [`with_recorded_requests`](ReplayModel::with_recorded_requests).
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.state.lock().requests.clone()
    }

    /// Indices of the entries no call has consumed yet.
    pub fn unused_entries(&self) -> Vec<usize> {
        let state = self.state.lock();
        state
            .consumed
            .iter()
            .enumerate()
            .filter(|(_, c)| !**c)
            .map(|(i, _)| i)
            .collect()
    }

    /// Takes the first unconsumed entry that accepts `request`.
    fn take(&self, request: &ModelRequest) -> Result<(usize, Entry), ModelError> {
        let mut state = self.state.lock();
        state.calls += 1;
        let call = state.calls;
        if self.record_requests {
            state.requests.push(request.clone());
        }
        let found = self
            .script
            .entries
            .iter()
            .enumerate()
            .find(|(i, e)| !state.consumed[*i] && e.matcher.accepts(request))
            .map(|(i, e)| (i, e.clone()));
        if let Some((i, _)) = &found {
            state.consumed[*i] = true;
        }
        drop(state);
        self.log_call(call, found.as_ref().map(|(i, _)| *i), request);
        found.ok_or_else(|| {
            let user: String = last_user(request).unwrap_or("").chars().take(80).collect();
            let message = format!(
                "replay script '{}' exhausted: call #{call} (session {}, last user message '{user}') matched no remaining entry",
                self.script.name,
                request.session_id.as_deref().unwrap_or("-")
            );
            tracing::error!("{message}");
            ModelError::new(ModelErrorKind::Protocol, message)
        })
    }

    fn log_call(&self, call: usize, entry: Option<usize>, request: &ModelRequest) {
        let Some(path) = &self.call_log else { return };
        let line = json!({
            "call": call,
            "entry": entry,
            "session_id": request.session_id,
            "last_user": last_user(request),
            "messages": request.messages.len(),
            "tools": request.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        });
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(err) = written {
            tracing::warn!(path = %path.display(), "cannot write the replay call log: {err}");
        }
    }
}

/// One step of a scripted stream.
enum Step {
    Delay(u64),
    Emit(ModelEvent),
    Touch(PathBuf),
    Fail(ModelError),
    Hang,
    HangForever,
    Stall(u64),
}

fn steps(index: usize, entry: &Entry) -> VecDeque<Step> {
    let mut out = VecDeque::new();
    let mut calls = 0u32;
    for (item_no, item) in entry.stream.iter().enumerate() {
        for _ in 0..item.repeat {
            out.push_back(Step::Delay(item.delay_ms.unwrap_or(entry.item_delay_ms)));
            match &item.kind {
                ItemKind::Reasoning(parts) => out.extend(
                    parts
                        .iter()
                        .map(|p| Step::Emit(ModelEvent::ReasoningDelta(p.clone()))),
                ),
                ItemKind::Text(parts) => out.extend(
                    parts
                        .iter()
                        .map(|p| Step::Emit(ModelEvent::TextDelta(p.clone()))),
                ),
                ItemKind::ToolCall {
                    name,
                    arguments,
                    id,
                } => {
                    let id = id
                        .clone()
                        .unwrap_or_else(|| format!("call_{index}_{item_no}"));
                    let call = calls;
                    calls += 1;
                    out.push_back(Step::Emit(ModelEvent::ToolCallStart {
                        index: call,
                        id: id.clone(),
                        name: name.clone(),
                    }));
                    if !arguments.is_empty() {
                        out.push_back(Step::Emit(ModelEvent::ToolCallArgumentsDelta {
                            index: call,
                            fragment: arguments.clone(),
                        }));
                    }
                    out.push_back(Step::Emit(ModelEvent::ToolCallEnd {
                        index: call,
                        id,
                        name: name.clone(),
                        arguments: arguments.clone(),
                    }));
                }
            }
        }
    }
    if let Some(path) = &entry.ready_file {
        out.push_back(Step::Touch(path.clone()));
    }
    push_ending(&entry.ending, entry, &mut out);
    out
}

fn push_ending(ending: &Ending, entry: &Entry, out: &mut VecDeque<Step>) {
    match ending {
        Ending::Finish(reason) => {
            if let Some(usage) = &entry.usage {
                out.push_back(Step::Emit(ModelEvent::Usage(usage.clone())));
            }
            out.push_back(Step::Emit(ModelEvent::Finish {
                reason: reason.clone(),
            }));
        }
        Ending::Error(err) => out.push_back(Step::Fail(err.clone())),
        Ending::Hang => out.push_back(Step::Hang),
        Ending::HangIgnoringAbort => out.push_back(Step::HangForever),
        Ending::Stall { ms, then } => {
            out.push_back(Step::Stall(*ms));
            push_ending(then, entry, out);
        }
    }
}

struct Run {
    steps: VecDeque<Step>,
    cancel: CancellationToken,
    done: bool,
}

async fn advance(mut run: Run) -> Option<(Result<ModelEvent, ModelError>, Run)> {
    loop {
        if run.done {
            return None;
        }
        let step = run.steps.pop_front()?;
        let cancelled = |mut run: Run| {
            run.done = true;
            Some((Err(ModelError::cancelled()), run))
        };
        match step {
            Step::Delay(0) => {}
            Step::Delay(ms) => {
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
                    _ = run.cancel.cancelled() => return cancelled(run),
                }
            }
            Step::Emit(_) if run.cancel.is_cancelled() => return cancelled(run),
            Step::Emit(event) => return Some((Ok(event), run)),
            Step::Touch(path) => {
                if let Err(err) = std::fs::File::create(&path) {
                    tracing::warn!(path = %path.display(), "cannot create the replay ready file: {err}");
                }
            }
            Step::Fail(err) => {
                run.done = true;
                return Some((Err(err), run));
            }
            Step::Hang => {
                run.cancel.cancelled().await;
                return cancelled(run);
            }
            Step::HangForever => futures::future::pending::<()>().await,
            Step::Stall(ms) => {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                if run.cancel.is_cancelled() {
                    return cancelled(run);
                }
            }
        }
    }
}

impl Model for ReplayModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn stream(
        &self,
        request: ModelRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<ModelStream, ModelError>> {
        let prepared = request
            .validate()
            .and_then(|()| {
                if cancel.is_cancelled() {
                    Err(ModelError::cancelled())
                } else {
                    Ok(())
                }
            })
            .and_then(|()| self.take(&request));
        Box::pin(async move {
            let (index, entry) = prepared?;
            if let (true, Ending::Error(err)) = (entry.stream.is_empty(), &entry.ending) {
                return Err(err.clone());
            }
            let run = Run {
                steps: steps(index, &entry),
                cancel,
                done: false,
            };
            Ok(futures::stream::unfold(run, advance).boxed())
        })
    }
}
