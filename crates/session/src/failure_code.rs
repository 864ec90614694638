//! The machine codes of a failed turn ([`crate::Failure::code`]) that dsh itself decides.
//!
//! A turn that failed in the model call carries the model error kind's own code instead
//! (`auth`, `rate_limited`, `insufficient_balance`, `bad_request`, `server`, `transport`,
//! `protocol`, `cancelled`), which the model seam defines; `protocol` is shared on purpose: a
//! stream that broke the stream contract is the same kind of failure as a wire-format one.
//! Front ends show and forward these codes; they never branch on a code not listed here.

/// The session refused an event (detached, over its size limit, closed).
pub const SESSION: &str = "session";
/// The agent loop itself failed: a panic, a driver that could not start, a ticket dropped.
pub const INTERNAL: &str = "internal";
/// The model's stream broke its contract (ended without a finish, events out of order).
pub const PROTOCOL: &str = "protocol";
/// A durability barrier (flush) before a request or a tool body failed.
pub const PERSISTENCE: &str = "persistence";
/// A service the step needs (the model, the tool registry) is not provided.
pub const SERVICE_UNAVAILABLE: &str = "service_unavailable";

/// The system message could not be built (a configured prompt file that cannot be read).
pub const CONTEXT: &str = "context";

/// A compaction the user asked for could not be made: nothing to compact, or no summary.
pub const COMPACTION: &str = "compaction";

/// Every code above, for tables and tests.
pub const ALL: [&str; 7] = [
    SESSION,
    INTERNAL,
    PROTOCOL,
    PERSISTENCE,
    SERVICE_UNAVAILABLE,
    CONTEXT,
    COMPACTION,
];
