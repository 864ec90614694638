//! A server's tools and what a call returns.

use serde::{Deserialize, Serialize};

/// What a server says about a tool's behaviour. Hints, not guarantees: a server could lie,
/// so only `read_only` relaxes anything (a call then runs like a read), and only because
/// the user chose to connect that server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAnnotations {
    /// A human-readable title.
    pub title: Option<String>,
    /// The tool changes nothing.
    pub read_only: Option<bool>,
    /// The tool may destroy data.
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments changes nothing more.
    pub idempotent: Option<bool>,
    /// The tool reaches the outside world (the web, say).
    pub open_world: Option<bool>,
}

/// One tool a server offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct McpTool {
    /// Its name on the server.
    pub name: String,
    /// What it does, for the model.
    pub description: Option<String>,
    /// The JSON Schema of its arguments, as the server sent it.
    pub input_schema: serde_json::Value,
    /// Its behaviour hints.
    pub annotations: ToolAnnotations,
}

/// What a call returned, flattened to text: text blocks as they are, other content (an
/// image, an embedded resource, a link) as one line saying what it was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallOutcome {
    /// The content, in order.
    pub text: String,
    /// The server reported the call as failed (`isError`).
    pub is_error: bool,
}
