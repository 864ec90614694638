//! The editor's file access: `FileAccess` over the client's `fs/read_text_file` and
//! `fs/write_text_file`, attached to every agent of a connection whose client offers both.
//! Tools then read the editor's buffers (unsaved changes included) and write into them, so
//! the editor reviews, formats and can undo what the agent changed.
//!
//! Both methods or neither: reads from the editor and writes to the disk would compare a
//! buffer's version with a file's, and refuse every edit of a file with unsaved changes.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest,
};
use async_trait::async_trait;
use dsh_fs::{FileAccess, FsError, TextFile, Version, check_expected};
use serde::Serialize;
use serde_json::Value;

use crate::outgoing::OutgoingTable;
use crate::rpc::request_frame;
use crate::transport::FrameSender;

/// How long the editor may take to answer one file request.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// The largest text read whole, as on the local disk.
const READ_CAP: usize = 2 * 1024 * 1024;

/// ACP's "resource not found" error code.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// One session's files, held by the editor.
pub(crate) struct EditorFiles {
    pub session_id: String,
    pub out: FrameSender,
    pub outgoing: Arc<OutgoingTable>,
}

impl EditorFiles {
    /// Sends `method` and waits for the client's answer.
    async fn ask(
        &self,
        path: &Path,
        method: &str,
        params: &impl Serialize,
    ) -> Result<Value, FsError> {
        let (id, answer) = self.outgoing.register();
        self.out.send(request_frame(id, method, params)).await;
        match tokio::time::timeout(ANSWER_WITHIN, answer).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(refused(path, &error)),
            Ok(Err(_)) => Err(FsError::Other {
                path: path.into(),
                detail: "the editor closed the connection before answering".into(),
            }),
            Err(_) => {
                self.outgoing.forget(id);
                Err(FsError::Other {
                    path: path.into(),
                    detail: format!(
                        "the editor did not answer {method} within {} s",
                        ANSWER_WITHIN.as_secs()
                    ),
                })
            }
        }
    }

    /// The buffer's text, or `None` when there is no such file.
    async fn current(&self, path: &Path) -> Result<Option<TextFile>, FsError> {
        match self.read(path).await {
            Ok(file) => Ok(Some(file)),
            Err(FsError::NotFound { .. }) => Ok(None),
            // Editors word a missing file differently; the disk says whether it exists.
            Err(_) if !path.exists() => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// The client's error object as a file error, in its own words.
fn refused(path: &Path, error: &Value) -> FsError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no message")
        .to_owned();
    if error.get("code").and_then(Value::as_i64) == Some(RESOURCE_NOT_FOUND) {
        return FsError::NotFound { path: path.into() };
    }
    FsError::Other {
        path: path.into(),
        detail: format!("the editor refused: {message}"),
    }
}

#[async_trait]
impl FileAccess for EditorFiles {
    fn holder(&self) -> &str {
        "the editor"
    }

    async fn read(&self, path: &Path) -> Result<TextFile, FsError> {
        let result = self
            .ask(
                path,
                "fs/read_text_file",
                &ReadTextFileRequest::new(self.session_id.clone(), path),
            )
            .await?;
        let answer: ReadTextFileResponse =
            serde_json::from_value(result).map_err(|e| FsError::Other {
                path: path.into(),
                detail: format!("the editor's answer to fs/read_text_file is not one: {e}"),
            })?;
        let text = answer.content.as_str();
        if text.len() > READ_CAP {
            return Err(FsError::TooLarge {
                path: path.into(),
                size: text.len() as u64,
                cap: READ_CAP as u64,
            });
        }
        if text.contains('\0') {
            return Err(FsError::NotText {
                path: path.into(),
                why: "it has a NUL byte".into(),
            });
        }
        Ok(TextFile {
            text: text.to_owned(),
            version: Version::of(text),
        })
    }

    async fn write(
        &self,
        path: &Path,
        text: &str,
        expected: Option<&Version>,
    ) -> Result<Version, FsError> {
        let current = self.current(path).await?;
        check_expected(path, current.as_ref().map(|f| &f.version), expected)?;
        self.ask(
            path,
            "fs/write_text_file",
            &WriteTextFileRequest::new(self.session_id.clone(), path, text),
        )
        .await?;
        Ok(Version::of(text))
    }
}
