//! Third-party packages whose normal or build edges encode architecture decisions, and the
//! only members allowed to name them: architecture invariant 5 of `docs/architecture.md`.
//!
//! This is the one reviewed place for the list. HTTP is listed by what a crate is for, not
//! by name pattern: every widely used HTTP client, server, framework and transport layer
//! (gRPC included, which is HTTP/2). Adding a crate here is a review decision; a member that
//! needs one the list refuses asks for it in the change that adds it. Dev edges are free —
//! tests may run a real server — and so is test support.

/// One restricted package: the members allowed to name it, and why.
pub struct Restricted {
    pub allowed: &'static [&'static str],
    pub why: &'static str,
}

const HTTP: &str = "only dsh-llm-openai (the model API) and dsh-mcp-rmcp (MCP's streamable HTTP) speak HTTP: no other crate ships an HTTP client or server (architecture invariant 5)";
const HTTP_CLIENTS: &[&str] = &["dsh-llm-openai", "dsh-mcp-rmcp"];

/// HTTP clients, servers, frameworks and transports.
const HTTP_STACKS: &[&str] = &[
    // Clients.
    "reqwest",
    "reqwest-middleware",
    "reqwest-eventsource",
    "ureq",
    "isahc",
    "surf",
    "attohttpc",
    "curl",
    "curl-sys",
    "minreq",
    "ehttp",
    "awc",
    "http-client",
    // The hyper family and other HTTP/1, HTTP/2 and HTTP/3 transports.
    "hyper",
    "hyper-util",
    "hyper-rustls",
    "hyper-tls",
    "hyper-openssl",
    "hyper-timeout",
    "h2",
    "h3",
    "tower-http",
    // gRPC (HTTP/2).
    "tonic",
    "grpcio",
    // Servers and frameworks.
    "axum",
    "axum-server",
    "actix-web",
    "actix-http",
    "warp",
    "rocket",
    "tide",
    "poem",
    "salvo",
    "gotham",
    "tiny_http",
    "ntex",
    "trillium",
    "viz",
];

/// The restriction on `package`, if it is restricted.
pub fn lookup(package: &str) -> Option<Restricted> {
    match package {
        "agent-client-protocol-schema" => Some(Restricted {
            allowed: &["dsh-acp"],
            why: "only dsh-acp uses agent-client-protocol-schema (architecture invariant 5)",
        }),
        "agent-client-protocol" => Some(Restricted {
            allowed: &[],
            why: "no crate ships the ACP SDK; the bridge uses the schema crate with its own transport and SDK clients serve only as test peers (architecture invariant 5)",
        }),
        // The MCP SDK carries an HTTP client: it is the MCP provider's alone.
        "rmcp" => Some(Restricted {
            allowed: &["dsh-mcp-rmcp"],
            why: "only dsh-mcp-rmcp uses rmcp: the MCP seam's consumers name dsh-mcp (architecture invariant 5)",
        }),
        http => HTTP_STACKS.contains(&http).then_some(Restricted {
            allowed: HTTP_CLIENTS,
            why: HTTP,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_unique_and_found() {
        let mut seen = std::collections::HashSet::new();
        for name in HTTP_STACKS {
            assert!(seen.insert(name), "{name} listed twice");
        }
        assert!(lookup("tonic").is_some());
        assert!(lookup("hyper-rustls").is_some());
        assert!(lookup("serde").is_none());
        assert_eq!(lookup("reqwest").map(|r| r.allowed), Some(HTTP_CLIENTS));
        assert_eq!(
            lookup("rmcp").map(|r| r.allowed),
            Some(&["dsh-mcp-rmcp"][..])
        );
    }
}
