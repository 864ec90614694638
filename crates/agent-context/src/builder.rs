//! [`LocalContext`]: the `ContextBuilder` over local disk and git.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use dsh_agent::record::{InstructionsRecord, SourceKind};
use dsh_agent::{ContextBuilder, ContextError, ContextRequest, PromptMode};

use crate::compose::{Parts, compose};
use crate::config::ContextConfig;
use crate::discover::{Found, candidates, read};
use crate::environment::{date, environment};
use crate::git;
use crate::prompt::builtin;
use crate::source::{describe, read_bounded};

/// Builds contexts from the local disk with its configuration.
pub struct LocalContext {
    config: ContextConfig,
}

impl LocalContext {
    /// A builder with `config`.
    pub fn new(config: ContextConfig) -> LocalContext {
        LocalContext { config }
    }

    /// The base prompt and its source: the caller's replacement, the prompt file, or the
    /// built-in prompt with the tools' guidance.
    fn base(
        &self,
        request: &ContextRequest,
    ) -> Result<(String, dsh_agent::record::InstructionSource), ContextError> {
        if let Some(caller) = &request.caller
            && caller.mode == PromptMode::Replace
        {
            let source = describe(
                SourceKind::Caller,
                "caller",
                caller.text.as_bytes(),
                caller.text.len() as u64,
            );
            return Ok((caller.text.clone(), source));
        }
        if let Some(file) = &self.config.system_prompt_file {
            let path = absolute(&request.cwd, file);
            let shown = path.display().to_string();
            let fail = |why: String| ContextError {
                message: format!("system_prompt_file {shown}: {why}"),
            };
            let head = read_bounded(&path).map_err(|err| fail(err.to_string()))?;
            if head.len > head.bytes.len() as u64 {
                return Err(fail(format!(
                    "it is {} bytes, over the 1 MiB limit",
                    head.len
                )));
            }
            let text = String::from_utf8(head.bytes.clone())
                .map_err(|_| fail("it is not UTF-8 text".to_owned()))?;
            let source = describe(SourceKind::PromptFile, &shown, &head.bytes, head.len);
            return Ok((text, source));
        }
        let text = builtin(request.audience, &request.tools);
        let source = describe(
            SourceKind::Builtin,
            "builtin",
            text.as_bytes(),
            text.len() as u64,
        );
        Ok((text, source))
    }
}

fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

#[async_trait]
impl ContextBuilder for LocalContext {
    async fn build(&self, request: ContextRequest) -> Result<InstructionsRecord, ContextError> {
        let root = git::find_root(&request.cwd);
        // Started first, so the files are read while git looks at the tree.
        let status = root
            .as_deref()
            .filter(|_| !self.config.git_timeout.is_zero())
            .and_then(git::start_status);
        let (base, base_source) = self.base(&request)?;
        let files = candidates(
            self.config.user_instructions.as_deref(),
            self.config.project_instructions,
            root.as_deref().unwrap_or(&request.cwd),
            &request.cwd,
        );
        let Found {
            sections,
            sources,
            warnings,
        } = read(files, self.config.limit_bytes);
        let dirty = git::dirty(status, self.config.git_timeout).await;
        let git = root.as_deref().map(|root| git::state(root, dirty));
        let env = environment(&request, git, &self.config.shell, date(&self.config.today));
        let appended = request
            .caller
            .as_ref()
            .filter(|c| c.mode == PromptMode::Append)
            .map(|c| c.text.as_str());
        let text = compose(&Parts {
            base: &base,
            environment: &env,
            sections: &sections,
            appended,
        });
        let mut all_sources = vec![base_source];
        all_sources.extend(sources);
        if let Some(appended) = appended {
            all_sources.push(describe(
                SourceKind::Caller,
                "caller",
                appended.as_bytes(),
                appended.len() as u64,
            ));
        }
        // The front ends show the record's warnings to their user; here they are only traced.
        for warning in &warnings {
            tracing::debug!("{warning}");
        }
        Ok(InstructionsRecord {
            text,
            environment: Some(env),
            sources: all_sources,
            caller: request.caller.clone(),
            warnings,
        })
    }
}
