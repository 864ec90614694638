//! One configured server as the tools see it: started once, started again once when it is
//! found gone, and followed across that restart for changes of its tool list.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dsh_kernel::Scope;
use dsh_mcp::{CallOutcome, CancellationToken, McpConnector, McpError, McpServer, ServerSpec};
use parking_lot::Mutex;
use tokio::sync::watch;

/// How long a finished call waits for a tool list change it caused to be registered: a
/// re-listing is one request, and a server that does not answer it must not hold the turn.
const SETTLE_LIMIT: Duration = Duration::from_secs(5);

pub(crate) struct Connection {
    spec: ServerSpec,
    connector: Arc<dyn McpConnector>,
    /// Where the followers of each started server run; disposed with the servers.
    scope: Scope,
    server: Mutex<Option<Arc<dyn McpServer>>>,
    /// The one restart after a crash has been used.
    restarted: AtomicBool,
    /// Held while a restart runs: calls that find the server gone together share its one
    /// restart (sessions share a configured server, so such calls can overlap).
    restarting: tokio::sync::Mutex<()>,
    /// Grows when the tool list may have changed: the server said so, or it was restarted.
    changes: watch::Sender<u64>,
    /// The value of `changes` the registered tools were listed after.
    applied: watch::Sender<u64>,
    /// The tools already left out for their schema.
    refused: Mutex<HashSet<String>>,
}

impl Connection {
    /// Starts `spec`'s server; its tool list changes are followed under `scope`.
    pub(crate) async fn start(
        spec: ServerSpec,
        connector: Arc<dyn McpConnector>,
        scope: Scope,
    ) -> Result<Arc<Connection>, McpError> {
        let server = connector.connect(&spec).await?;
        let connection = Arc::new(Connection {
            spec,
            connector,
            scope,
            server: Mutex::new(Some(server.clone())),
            restarted: AtomicBool::new(false),
            restarting: tokio::sync::Mutex::new(()),
            changes: watch::channel(0).0,
            applied: watch::channel(0).0,
            refused: Mutex::default(),
        });
        connection.follow(&server);
        Ok(connection)
    }

    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    /// The running server, when there is one.
    pub(crate) fn current(&self) -> Option<Arc<dyn McpServer>> {
        self.server.lock().clone()
    }

    /// A counter that grows whenever the tools should be listed again.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The tools listed after change `seen` are registered.
    pub(crate) fn applied(&self, seen: u64) {
        self.applied.send_replace(seen);
    }

    /// Whether `tool` is left out for its schema for the first time.
    pub(crate) fn first_refusal(&self, tool: &str) -> bool {
        self.refused.lock().insert(tool.to_owned())
    }

    /// Nothing registers the tools any more: calls stop waiting for it.
    pub(crate) fn unfollowed(&self) {
        self.applied.send_replace(u64::MAX);
    }

    /// Forwards `server`'s tool list changes to this connection's counter, until the
    /// server is gone.
    fn follow(&self, server: &Arc<dyn McpServer>) {
        let mut changed = server.tools_changed();
        let changes = self.changes.clone();
        let followed = self.scope.spawn(async move {
            while changed.changed().await.is_ok() {
                changes.send_modify(|n| *n += 1);
            }
        });
        if let Err(error) = followed {
            tracing::warn!(server = %self.spec.name, "its tool list is not followed: {error}");
        }
    }

    /// Calls `tool`. A server found gone fails this call and is started again, once, by the
    /// next one. A call after which the tool list changed returns once the new list is
    /// registered, so the model's next request offers it.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        cancel: CancellationToken,
    ) -> Result<CallOutcome, McpError> {
        let server = match self.current() {
            Some(server) => server,
            None => self.restart().await?,
        };
        let mut outcome = server.call(tool, arguments, cancel).await;
        if let Err(McpError::Gone { reason, .. }) = &mut outcome {
            let mut current = self.server.lock();
            if current.as_ref().is_some_and(|s| Arc::ptr_eq(s, &server)) {
                *current = None;
            }
            // The model reads this: whether trying again can help.
            if !self.restarted.load(Ordering::Acquire) {
                reason.push_str("; it is started again at the next call of one of its tools");
            }
        }
        self.settle().await;
        outcome
    }

    /// Waits, a bounded time, until the tools are registered from the latest list.
    async fn settle(&self) {
        let wanted = *self.changes.borrow();
        let mut applied = self.applied.subscribe();
        let caught_up = applied.wait_for(|seen| *seen >= wanted);
        if tokio::time::timeout(SETTLE_LIMIT, caught_up).await.is_err() {
            tracing::warn!(server = %self.spec.name, "its changed tool list was not registered in time");
        }
    }

    async fn restart(&self) -> Result<Arc<dyn McpServer>, McpError> {
        let _one = self.restarting.lock().await;
        // Another call restarted it while this one waited.
        if let Some(server) = self.current() {
            return Ok(server);
        }
        if self.restarted.swap(true, Ordering::AcqRel) {
            return Err(McpError::Gone {
                server: self.spec.name.clone(),
                reason: "it stopped again after a restart; it is not started a third time".into(),
            });
        }
        tracing::warn!(server = %self.spec.name, "the MCP server is gone: starting it again");
        let server = self.connector.connect(&self.spec).await?;
        *self.server.lock() = Some(server.clone());
        self.follow(&server);
        // The new process may offer other tools than the one that died.
        self.changes.send_modify(|n| *n += 1);
        Ok(server)
    }

    /// Shuts the server down.
    pub(crate) async fn shutdown(&self) {
        let server = self.server.lock().take();
        if let Some(server) = server {
            server.shutdown().await;
        }
    }
}
