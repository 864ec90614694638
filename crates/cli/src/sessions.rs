//! `dsh sessions list | show | rm`, through the persistence service alone. `list` reads
//! headers only and `show` reads with `inspect`, so neither ever changes a log: a log that
//! needs repair is repaired in memory for display.

use std::sync::Arc;

use dsh_agent::record::{InstructionsRecord, Record};
use dsh_kernel::Runtime;
use dsh_session::{
    CloseIntent, EventType, EventVocabulary, ListQuery, LoadedSession, Origin, PersistenceError,
    SESSION_TITLE, SessionEvent, SessionPersistence, SessionSummary, TitleRecord, TitleSource,
};
use dsh_tools::safe_text::SafeText;

use crate::args::{ColorChoice, Global, SessionsCommand};
use crate::digest::{Digest, digest};
use crate::exit::Failure;
use crate::lookup::{MIN_PREFIX, resolve};
use crate::render::Renderer;
use crate::settings::{CommandFlags, Settings};
use crate::store::Store;

/// Runs `dsh sessions …`; returns the exit status.
pub async fn sessions(global: &Global, command: &SessionsCommand) -> u8 {
    let settings = match Settings::resolve(global, CommandFlags::default()) {
        Ok(settings) => settings,
        Err(failure) => {
            return crate::exit::report(
                &failure,
                crate::render::View::Human {
                    color: false,
                    split: true,
                },
            );
        }
    };
    // An import may be the store's first write: a JSONL directory is made for it.
    let importing = matches!(command, SessionsCommand::Import { .. });
    let store = match importing {
        true => Store::prepared(&settings),
        false => Store::of(&settings),
    };
    let store = match store {
        Ok(store) => store,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            return failure.status;
        }
    };
    if store.surely_empty()
        && let Some(status) = nothing_stored(command, &store)
    {
        return status;
    }
    let runtime = Arc::new(Runtime::new());
    let result = async {
        runtime
            .load(store.plugin())
            .await
            .map_err(|e| Failure::internal(format!("cannot open {}: {e}", store.shown())))?;
        let persistence = runtime
            .scope()
            .require::<dyn SessionPersistence>()
            .map_err(|e| Failure::internal(format!("no session storage: {e}")))?;
        match command {
            SessionsCommand::List {
                json,
                limit,
                here,
                all,
                all_projects,
            } => {
                let what = Listing {
                    json: *json,
                    limit: *limit,
                    here: *here,
                    all: *all,
                    all_projects: *all_projects,
                };
                list(&*persistence, &store, what).await
            }
            SessionsCommand::Show {
                id,
                json,
                color: _,
                system: true,
                children: _,
            } => show_system(&*persistence, &store, id, *json).await,
            SessionsCommand::Show {
                id,
                json,
                color,
                system: false,
                children,
            } => {
                let how = Showing {
                    json: *json,
                    color: *color,
                    children: *children,
                };
                show(&runtime, &*persistence, &store, id, how).await
            }
            SessionsCommand::Rm { id } => remove(&*persistence, &store, id).await,
            SessionsCommand::Rename { id, title } => rename(&*persistence, &store, id, title).await,
            SessionsCommand::Export { ids } => {
                crate::transfer::export(&*persistence, &store, ids).await
            }
            SessionsCommand::Import { file } => import(&*persistence, file.as_deref()).await,
        }
    }
    .await;
    runtime.shutdown().await;
    match result {
        Ok(()) => 0,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            failure.status
        }
    }
}

/// What the listing left out, in words (`2 more where no model answered, 1 more of a
/// subagent` with `more` = "more "); empty when nothing was.
fn left_out(unanswered: usize, children: usize, more: &str) -> String {
    let mut parts = Vec::new();
    if unanswered > 0 {
        parts.push(format!("{unanswered} {more}where no model answered"));
    }
    if children > 0 {
        parts.push(format!("{children} {more}of a subagent"));
    }
    parts.join(", ")
}

/// What a command answers when nothing is stored yet, without opening (and so creating)
/// the store; `None` for one that goes on (an import stores the first sessions).
fn nothing_stored(command: &SessionsCommand, store: &Store) -> Option<u8> {
    let unknown = |what: &str| {
        eprintln!(
            "error: no session '{what}' in {}; see `dsh sessions list`",
            store.shown()
        );
        Some(1)
    };
    match command {
        SessionsCommand::List { json: false, .. } => {
            say(&format!("no sessions in {}\n", store.shown()));
            Some(0)
        }
        SessionsCommand::List { json: true, .. } => Some(0),
        SessionsCommand::Import { .. } => None,
        SessionsCommand::Export { ids } if ids.is_empty() => Some(0),
        SessionsCommand::Export { ids } => unknown(&ids.join(" ")),
        SessionsCommand::Show { id, .. }
        | SessionsCommand::Rm { id }
        | SessionsCommand::Rename { id, .. } => unknown(id),
    }
}

/// `dsh sessions import [FILE]`: from the file, or stdin without one (or with `-`).
async fn import(
    persistence: &dyn SessionPersistence,
    file: Option<&std::path::Path>,
) -> Result<(), Failure> {
    match file.filter(|f| f.as_os_str() != "-") {
        Some(path) => {
            let opened = std::fs::File::open(path)
                .map_err(|e| Failure::config(format!("cannot read {}: {e}", path.display())))?;
            let from = path.display().to_string();
            crate::transfer::import(persistence, std::io::BufReader::new(opened), &from).await
        }
        None => crate::transfer::import(persistence, std::io::stdin().lock(), "stdin").await,
    }
}

fn say(text: &str) {
    let _ = crate::output::write(text.as_bytes());
}

fn failed(e: impl std::fmt::Display) -> Failure {
    Failure::internal(e.to_string())
}

/// `YYYY-MM-DD HH:MM` (UTC) of epoch milliseconds.
pub fn timestamp(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// The shortest prefix of each id, at least [`MIN_PREFIX`] long, that no other id shares.
fn prefixes(ids: &[String]) -> Vec<usize> {
    ids.iter()
        .map(|id| {
            let mut len = MIN_PREFIX.min(id.len());
            while len < id.len()
                && ids
                    .iter()
                    .any(|other| other != id && other.starts_with(&id[..len]))
            {
                len += 1;
            }
            len
        })
        .collect()
}

/// What `dsh sessions list` was asked for.
struct Listing {
    json: bool,
    limit: usize,
    here: bool,
    all: bool,
    all_projects: bool,
}

async fn list(
    persistence: &dyn SessionPersistence,
    store: &Store,
    what: Listing,
) -> Result<(), Failure> {
    let Listing {
        json,
        limit,
        here,
        all,
        all_projects,
    } = what;
    let here_dir = std::env::current_dir().map_err(failed)?;
    let query = match (here, all_projects) {
        (true, _) => ListQuery {
            cwd: Some(here_dir.display().to_string()),
            project: None,
        },
        (false, true) => ListQuery::default(),
        (false, false) => ListQuery {
            cwd: None,
            project: Some(dsh_session::project_of(&here_dir)),
        },
    };
    let listing = persistence.list(&query).await.map_err(failed)?;
    if let Some(first) = listing.skipped.first() {
        eprintln!(
            "warning: skipped {} unreadable logs (first: {}: {})",
            listing.skipped.len(),
            first.location.display,
            first.reason
        );
    }
    // Newest first, until `limit` are shown; without --all, sessions no model ever answered
    // in (a run that failed first) and subagents' sessions (their parent's shows them) are
    // left out. Reading each log is what a title costs.
    let mut shown: Vec<(&SessionSummary, Digest)> = Vec::new();
    let (mut hidden, mut children) = (0usize, 0usize);
    for summary in &listing.sessions {
        if shown.len() == limit {
            break;
        }
        if summary.header.parent_call.is_some() && !all {
            children += 1;
            continue;
        }
        let digest = match persistence
            .inspect(&summary.header.id, &EventVocabulary::new())
            .await
        {
            Ok(loaded) => digest(&loaded.events),
            Err(_) => Digest::default(),
        };
        if digest.answered || all {
            shown.push((summary, digest));
        } else {
            hidden += 1;
        }
    }
    if json {
        let mut out = String::new();
        for (s, digest) in &shown {
            let line = serde_json::json!({
                "session_id": s.header.id.to_string(),
                "created_at": s.header.created_at,
                "updated_at": s.updated_at,
                "cwd": s.header.cwd,
                "path": s.location.path,
                "title": digest.title,
                "turns": digest.turns,
                "model": digest.model,
                "answered": digest.answered,
                "parent": s.header.parent.as_ref().map(ToString::to_string),
            });
            out.push_str(&format!("{line}\n"));
        }
        say(&out);
        return Ok(());
    }
    if shown.is_empty() {
        let more = match left_out(hidden, children, "") {
            none if none.is_empty() => none,
            some => format!(" ({some}: --all shows them)"),
        };
        let scope = match (&query.cwd, &query.project) {
            (Some(cwd), _) => format!(" for {cwd}"),
            (None, Some(_)) => " for this project (--all-projects shows every project's)".into(),
            (None, None) => String::new(),
        };
        say(&format!("no sessions in {}{scope}{more}\n", store.shown()));
        return Ok(());
    }
    let ids: Vec<String> = listing
        .sessions
        .iter()
        .map(|s| s.header.id.to_string())
        .collect();
    let lens = prefixes(&ids);
    let width = lens
        .iter()
        .take(shown.len())
        .copied()
        .max()
        .unwrap_or(MIN_PREFIX);
    let models = shown
        .iter()
        .map(|(_, d)| d.model.as_deref().unwrap_or("-").chars().count())
        .max()
        .unwrap_or(5)
        .clamp(5, 24);
    // Titles are cut at 40 characters, so the directory after them stays in view.
    let titles: Vec<String> = shown
        .iter()
        .map(|(_, d)| {
            let title = d.title.as_deref().map(SafeText::plain).unwrap_or_default();
            crate::digest::cut(&title, 40)
        })
        .collect();
    let room = titles
        .iter()
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let mut out = format!(
        "{:<width$}  {:<16}  {:>5}  {:<models$}  {:<room$}  CWD\n",
        "ID", "UPDATED", "TURNS", "MODEL", "TITLE"
    );
    for ((s, digest), title) in shown.iter().zip(&titles) {
        let index = listing
            .sessions
            .iter()
            .position(|x| x.header.id == s.header.id)
            .unwrap_or(0);
        let len = lens.get(index).copied().unwrap_or(MIN_PREFIX);
        let model = digest
            .model
            .as_deref()
            .map(SafeText::plain)
            .unwrap_or("-".into());
        // `{:<n$}` pads by characters, which is what a terminal shows of these titles.
        let pad = room.saturating_sub(title.chars().count());
        out.push_str(&format!(
            "{:<width$}  {}  {:>5}  {:<models$}  {title}{:pad$}  {}\n",
            &ids_of(s)[..len],
            timestamp(s.updated_at),
            digest.turns,
            crate::digest::cut(&model, models),
            "",
            SafeText::plain(&s.header.cwd),
        ));
    }
    let more = left_out(hidden, children, "more ");
    if !more.is_empty() {
        out.push_str(&format!("({more}: --all shows them)\n"));
    }
    say(&out);
    Ok(())
}

fn ids_of(s: &SessionSummary) -> String {
    s.header.id.to_string()
}

/// The stored session `arg` names, read without changing it.
async fn stored(
    persistence: &dyn SessionPersistence,
    store: &Store,
    arg: &str,
) -> Result<LoadedSession, Failure> {
    let id = resolve(persistence, store, arg).await?;
    persistence
        .inspect(&id, &EventVocabulary::new())
        .await
        .map_err(failed)
}

/// How `dsh sessions show` shows a transcript.
struct Showing {
    json: bool,
    color: ColorChoice,
    /// Each subagent's work under the call that started it.
    children: bool,
}

/// The stored sessions started by a call of `parent`, each with the call's id.
async fn children_of(
    persistence: &dyn SessionPersistence,
    parent: &dsh_session::SessionId,
) -> Vec<(String, dsh_session::SessionId)> {
    let Ok(listing) = persistence.list(&ListQuery::default()).await else {
        return Vec::new();
    };
    let mut children: Vec<(i64, String, dsh_session::SessionId)> = listing
        .sessions
        .iter()
        .filter(|s| s.header.parent.as_ref() == Some(parent))
        .filter_map(|s| {
            let call = s.header.parent_call.clone()?;
            Some((s.header.created_at, call, s.header.id.clone()))
        })
        .collect();
    children.sort();
    children
        .into_iter()
        .map(|(_, call, id)| (call, id))
        .collect()
}

async fn show(
    runtime: &Runtime,
    persistence: &dyn SessionPersistence,
    store: &Store,
    arg: &str,
    how: Showing,
) -> Result<(), Failure> {
    let Showing {
        json,
        color,
        children: inline,
    } = how;
    let loaded = stored(persistence, store, arg).await?;
    if json {
        let mut out = Vec::new();
        for event in &loaded.events {
            event.encode_into(&mut out);
            out.push(b'\n');
        }
        let _ = crate::output::write(&out);
        return Ok(());
    }
    let model = loaded
        .events
        .iter()
        .filter(|e| e.kind.as_str() == EventType::ASSISTANT_MESSAGE)
        .find_map(|e| match Record::decode(e) {
            Ok(Record::AssistantMessage(answer)) => Some(answer.model),
            _ => None,
        });
    let label = match model.as_deref() {
        Some(m) if m.starts_with("replay:") => format!("REPLAY ({m})"),
        Some(m) => m.to_owned(),
        None => "no model call".to_owned(),
    };
    say(&format!(
        "session {} · {} · created {} · {label}\n",
        loaded.header.id,
        SafeText::plain(&loaded.header.cwd),
        timestamp(loaded.header.created_at)
    ));
    let terminal = crate::output::is_terminal();
    let no_color = std::env::var("NO_COLOR").is_ok_and(|v| !v.is_empty());
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    let color = match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && !no_color && !dumb,
    };
    let tools = crate::compose::presenters(runtime).await?;
    let renderer = Renderer::transcript(color, tools);
    let children = children_of(persistence, &loaded.header.id).await;
    renderer.follow(&loaded.header.id);
    for event in &loaded.events {
        renderer.replay(event, &loaded.header.id);
        // A subagent's work, under the call that started it.
        if inline && event.kind.as_str() == EventType::TOOL_CALL {
            show_children(persistence, &renderer, event, &children).await;
        }
    }
    if !inline && !children.is_empty() {
        let mut out = String::from("subagents (--children shows their work here):\n");
        for (_, child) in &children {
            out.push_str(&format!("  dsh sessions show {child}\n"));
        }
        say(&out);
    }
    Ok(())
}

/// The stored children started by the call `event` records, shown nested.
async fn show_children(
    persistence: &dyn SessionPersistence,
    renderer: &Renderer,
    event: &SessionEvent,
    children: &[(String, dsh_session::SessionId)],
) {
    let Ok(Record::ToolCall(call)) = Record::decode(event) else {
        return;
    };
    for (_, id) in children.iter().filter(|(c, _)| *c == call.call_id) {
        match persistence.inspect(id, &EventVocabulary::new()).await {
            Ok(child) => {
                renderer.adopt(&child.header, &child.events);
            }
            Err(e) => say(&format!("(the subagent {id} cannot be read: {e})\n")),
        }
    }
}

/// `dsh sessions show --system`: the system text as recorded, byte for byte (with `--json`,
/// every recorded version as a JSON line).
async fn show_system(
    persistence: &dyn SessionPersistence,
    store: &Store,
    arg: &str,
    json: bool,
) -> Result<(), Failure> {
    let loaded = stored(persistence, store, arg).await?;
    let records: Vec<InstructionsRecord> = loaded
        .events
        .iter()
        .filter_map(|e| match Record::decode(e) {
            Ok(Record::Instructions(record)) => Some(record),
            Ok(_) | Err(_) => None,
        })
        .collect();
    let Some(last) = records.last() else {
        return Err(Failure {
            status: 1,
            code: "no_system_message",
            message: format!(
                "session {} has no recorded system message: no turn of it ran with a dsh that records one",
                loaded.header.id
            ),
        });
    };
    if json {
        let mut out = String::new();
        for record in &records {
            out.push_str(
                &serde_json::to_string(record).map_err(|e| Failure::internal(e.to_string()))?,
            );
            out.push('\n');
        }
        let _ = crate::output::write(out.as_bytes());
        return Ok(());
    }
    // Exact when piped (to diff or keep); on a terminal the files it quotes must not drive it.
    if crate::output::is_terminal() {
        let _ = crate::output::write(SafeText::plain(&last.text).as_bytes());
    } else {
        let _ = crate::output::write(last.text.as_bytes());
    }
    Ok(())
}

async fn remove(
    persistence: &dyn SessionPersistence,
    store: &Store,
    arg: &str,
) -> Result<(), Failure> {
    let id = resolve(persistence, store, arg).await?;
    persistence.delete(&id).await.map_err(failed)?;
    say(&format!("removed {id}\n"));
    Ok(())
}

/// Appends a `session/title` to the stored log, as its own writer: refused while the session
/// is open in a dsh (rename it there, or once it closed).
async fn rename(
    persistence: &dyn SessionPersistence,
    store: &Store,
    arg: &str,
    title: &str,
) -> Result<(), Failure> {
    let Some(title) = dsh_session::title_of(title) else {
        return Err(Failure {
            status: crate::exit::USAGE,
            code: "usage",
            message: "the title holds no text".into(),
        });
    };
    let id = resolve(persistence, store, arg).await?;
    let open_elsewhere = |e: PersistenceError| match e {
        PersistenceError::Locked { .. } | PersistenceError::Live { .. } => Failure {
            status: 1,
            code: "session_open",
            message: format!("session {id} is open in a running dsh; rename it once it closed"),
        },
        other => failed(other),
    };
    let loaded = persistence
        .load(&id, &EventVocabulary::new())
        .await
        .map_err(open_elsewhere)?;
    let next_seq = loaded.events.len() as u64;
    let record = TitleRecord {
        title: title.clone(),
        source: TitleSource::Rename,
    };
    let data = serde_json::value::to_raw_value(&record).map_err(failed)?;
    let event = SessionEvent {
        seq: next_seq,
        kind: EventType::new(SESSION_TITLE).map_err(failed)?,
        time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        ignorable: true,
        data,
    };
    let origin = Origin::Resume {
        next_seq,
        revision: loaded.revision,
    };
    persistence
        .create(&loaded.header, origin)
        .await
        .map_err(open_elsewhere)?;
    let appended = persistence.append(&id, &[Arc::new(event)]).await;
    let closed = persistence.close(&id, CloseIntent::Flush).await;
    appended.and(closed).map_err(failed)?;
    say(&format!("renamed {id}: {}\n", SafeText::plain(&title)));
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_are_utc_civil_dates() {
        assert_eq!(super::timestamp(0), "1970-01-01 00:00");
        assert_eq!(super::timestamp(1_767_225_600_000), "2026-01-01 00:00");
        assert_eq!(
            super::timestamp(951_782_400_000 + 61_000),
            "2000-02-29 00:01"
        );
    }

    #[test]
    fn prefixes_are_unique_and_at_least_eight_long() {
        let ids = vec![
            "01a2359d-aaaa".to_owned(),
            "01a2359d-bbbb".to_owned(),
            "ffffffff0".to_owned(),
        ];
        assert_eq!(super::prefixes(&ids), vec![10, 10, 8]);
    }
}
