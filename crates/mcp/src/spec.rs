//! How to start or reach one MCP server.

use std::path::PathBuf;
use std::time::Duration;

/// How a server is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, on top of the environment dsh passes on.
        env: Vec<(String, String)>,
        /// Where it runs (the session's directory when `None`).
        cwd: Option<PathBuf>,
    },
    /// A server at a URL speaking MCP's streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request (an authorization header, say).
        headers: Vec<(String, String)>,
    },
}

/// One server: its name (which prefixes its tools' names) and how to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSpec {
    /// The name it was configured under.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// How long starting and initializing may take (default 10 s).
    pub startup_timeout: Duration,
    /// How long one tool call may take (default 60 s).
    pub tool_timeout: Duration,
    /// For a stdio server: started in the kernel's sandbox, as a command is (none: as the
    /// user's own program, unconfined). A connector that cannot confine it does not start it.
    pub sandbox: Option<Sandbox>,
}

/// The sandbox a stdio server starts in: everything readable, these directories writable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// Written to, with everything under them (none: read-only).
    pub writable: Vec<PathBuf>,
    /// Network sockets allowed (local ones always are).
    pub network: bool,
}

impl ServerSpec {
    /// The default startup timeout.
    pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
    /// The default tool timeout.
    pub const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

    /// A server reached by `transport`, with the default timeouts.
    pub fn new(name: impl Into<String>, transport: Transport) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            transport,
            startup_timeout: Self::STARTUP_TIMEOUT,
            tool_timeout: Self::TOOL_TIMEOUT,
            sandbox: None,
        }
    }

    /// A stdio server with the default timeouts.
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> ServerSpec {
        let transport = Transport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            cwd: None,
        };
        ServerSpec::new(name, transport)
    }

    /// A streamable-HTTP server with the default timeouts.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> ServerSpec {
        let transport = Transport::Http {
            url: url.into(),
            headers: Vec::new(),
        };
        ServerSpec::new(name, transport)
    }
}
