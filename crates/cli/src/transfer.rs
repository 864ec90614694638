//! `dsh sessions export` and `dsh sessions import`: sessions copied between stores (the JSONL
//! files and a PostgreSQL database) in the log format every provider stores, byte for byte:
//! each session is its header record followed by its events, one a line, and a stream holds
//! them one after another (a header record starts the next).
//!
//! Export writes what is stored, never a repair: a session whose writer died mid-turn is
//! exported as it is, and closed when it is next loaded wherever it lands. Import checks each
//! session whole before storing anything of it, so a bad line costs only its own session.

use std::io::BufRead;
use std::sync::Arc;

use dsh_session::log_format::header;
use dsh_session::{
    CloseIntent, EventVocabulary, ListQuery, Origin, PersistenceError, SessionEvent, SessionHeader,
    SessionPersistence,
};

use crate::exit::Failure;
use crate::store::Store;

/// Writes the sessions `ids` name (every stored session without any) to stdout.
pub async fn export(
    persistence: &dyn SessionPersistence,
    store: &Store,
    ids: &[String],
) -> Result<(), Failure> {
    let chosen = match ids.is_empty() {
        false => {
            let mut chosen = Vec::new();
            for arg in ids {
                chosen.push(crate::lookup::resolve(persistence, store, arg).await?);
            }
            chosen
        }
        true => {
            let listing = persistence
                .list(&ListQuery::default())
                .await
                .map_err(|e| Failure::internal(e.to_string()))?;
            // Oldest first: a parent before its children, as they were made.
            let mut all: Vec<_> = listing.sessions.into_iter().map(|s| s.header).collect();
            all.sort_by(|a, b| (a.created_at, a.id.as_str()).cmp(&(b.created_at, b.id.as_str())));
            all.into_iter().map(|h| h.id).collect()
        }
    };
    for id in chosen {
        let loaded = persistence
            .inspect(&id, &EventVocabulary::new())
            .await
            .map_err(|e| Failure::internal(e.to_string()))?;
        let stored = loaded.events.len() - loaded.repair.closers as usize;
        let mut out = header::encode(&loaded.header);
        for event in &loaded.events[..stored] {
            event.encode_into(&mut out);
            out.push(b'\n');
        }
        crate::output::write(&out)
            .map_err(|e| Failure::internal(format!("cannot write the export: {e}")))?;
    }
    Ok(())
}

/// One session read from an import stream: its header, its events, and the line it starts.
struct Incoming {
    header: SessionHeader,
    events: Vec<Arc<SessionEvent>>,
    line: usize,
}

/// Stores every session of `input` that is not stored yet; says what it did with each on
/// stderr. A session already stored is left as it is.
pub async fn import(
    persistence: &dyn SessionPersistence,
    input: impl BufRead,
    from: &str,
) -> Result<(), Failure> {
    let (mut imported, mut kept, mut refused) = (0usize, 0usize, 0usize);
    let mut current: Option<Incoming> = None;
    let mut broken: Option<(usize, String)> = None;
    let mut store_one = async |incoming: Option<Incoming>, broken: Option<(usize, String)>| {
        let Some(incoming) = incoming else {
            return;
        };
        if let Some((line, reason)) = broken {
            refused += 1;
            eprintln!(
                "error: {from}:{line}: session {} not imported: {reason}",
                incoming.header.id
            );
            return;
        }
        match store(persistence, &incoming).await {
            Ok(()) => imported += 1,
            Err(PersistenceError::AlreadyExists { .. }) => {
                kept += 1;
                eprintln!(
                    "session {} is already stored; left as it is",
                    incoming.header.id
                );
            }
            Err(e) => {
                refused += 1;
                eprintln!(
                    "error: {from}:{}: session {} not imported: {e}",
                    incoming.line, incoming.header.id
                );
            }
        }
    };
    for (index, line) in input.split(b'\n').enumerate() {
        let number = index + 1;
        let line = line.map_err(|e| Failure::internal(format!("cannot read {from}: {e}")))?;
        if line.is_empty() {
            continue;
        }
        // A header record starts the next session.
        if line.starts_with(b"{\"format\":") {
            match header::decode(&line) {
                Ok(header) => {
                    store_one(current.take(), broken.take()).await;
                    current = Some(Incoming {
                        header,
                        events: Vec::new(),
                        line: number,
                    });
                    continue;
                }
                Err(header::HeaderProblem::Corrupt(reason)) => {
                    return Err(Failure::config(format!(
                        "{from}:{number}: not a session header: {reason}"
                    )));
                }
                Err(header::HeaderProblem::Version(version)) => {
                    return Err(Failure::config(format!(
                        "{from}:{number}: a session of format version {version}, which this \
                         dsh does not read"
                    )));
                }
            }
        }
        let Some(incoming) = current.as_mut() else {
            return Err(Failure::config(format!(
                "{from}:{number}: an event before any session header; `dsh sessions export` \
                 writes what import reads"
            )));
        };
        if broken.is_some() {
            continue;
        }
        match SessionEvent::decode(&line) {
            Ok(event) if event.seq == incoming.events.len() as u64 => {
                incoming.events.push(Arc::new(event));
            }
            Ok(event) => {
                broken = Some((
                    number,
                    format!(
                        "event seq {} where {} was expected",
                        event.seq,
                        incoming.events.len()
                    ),
                ));
            }
            Err(e) => broken = Some((number, e.detail())),
        }
    }
    store_one(current.take(), broken.take()).await;
    eprintln!("imported {imported} session(s); {kept} already stored; {refused} refused");
    match refused {
        0 => Ok(()),
        _ => Err(Failure {
            status: 1,
            code: "import_refused",
            message: format!("{refused} session(s) of {from} were not imported"),
        }),
    }
}

/// Stores one session whole, as a new one.
async fn store(
    persistence: &dyn SessionPersistence,
    incoming: &Incoming,
) -> Result<(), PersistenceError> {
    let id = &incoming.header.id;
    persistence.create(&incoming.header, Origin::New).await?;
    let stored = async {
        persistence.append(id, &incoming.events).await?;
        persistence.flush(id).await
    }
    .await;
    let intent = match stored {
        Ok(()) => CloseIntent::Flush,
        Err(_) => CloseIntent::Abandon,
    };
    let closed = persistence.close(id, intent).await;
    stored.and(closed)
}
