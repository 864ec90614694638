//! `dsh models`: the names the configured server offers (`GET <base_url>/models`), or the
//! built-in replay scripts with `--replay`, so `--model` can be chosen without the docs.

use dsh_llm::CancellationToken;

use crate::args::Global;
use crate::exit::Failure;
use crate::settings::{CommandFlags, Settings};

/// Runs `dsh models`; returns the exit status.
pub async fn models(global: &Global, as_json: bool) -> u8 {
    match list(global).await {
        Ok(names) => {
            let text = if as_json {
                format!("{}\n", serde_json::json!(names))
            } else {
                names.iter().map(|n| format!("{n}\n")).collect()
            };
            let _ = crate::output::write(text.as_bytes());
            0
        }
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            failure.status
        }
    }
}

async fn list(global: &Global) -> Result<Vec<String>, Failure> {
    let settings = Settings::resolve(global, CommandFlags::default())?;
    if settings.replay.is_some() {
        return Ok(crate::model::BUILTINS
            .iter()
            .map(|s| (*s).to_owned())
            .collect());
    }
    let model = crate::model::server_model(&settings)?;
    let cancel = CancellationToken::new();
    let listing = tokio::select! {
        listing = model.list_models(cancel.clone()) => listing,
        _ = tokio::signal::ctrl_c() => {
            cancel.cancel();
            return Err(Failure { status: crate::exit::INTERRUPTED, code: "interrupted", message: "interrupted".into() });
        }
    };
    listing.map_err(|e| {
        Failure::internal(format!(
            "cannot list the models of {}: {e}",
            settings.base_url.value
        ))
    })
}
