//! The RFC gates: where RFCs live, what they look like, the generated
//! index and the scaffold.

pub mod format;
pub mod index;
pub mod new;
pub mod readme;
pub mod tree;

use std::sync::LazyLock;

use regex::Regex;

use crate::date::Date;

/// Where the RFC tree lives.
pub const RFC_ROOT: &str = "docs/rfc";
/// The generated index.
pub const INDEX_PATH: &str = "docs/rfc/INDEX.md";
/// The curated front door, which must hold no index rows.
pub const README_PATH: &str = "docs/rfc/README.md";

/// Lifecycles, in canonical order.
pub const LIFECYCLES: [&str; 3] = ["proposed", "implemented", "rejected"];
/// Classes, in canonical order. Adding one means changing this and the class table in
/// `docs/rfc/README.md` in the same change.
pub const CLASSES: [&str; 6] = [
    "feature",
    "bug-fix",
    "simplification",
    "architecture",
    "process",
    "testing",
];

/// The day the uniform format was adopted: the grandfather comment is only for older RFCs.
pub const FORMAT_ADOPTED: (i32, u8, u8) = (2026, 12, 1);

/// The adoption date as a [`Date`].
pub fn format_adopted() -> Date {
    let (y, m, d) = FORMAT_ADOPTED;
    Date::new(y, m, d).unwrap_or_else(|| Date::from_days(0))
}

/// Compiles a constant pattern. The patterns are literals exercised by the test suite, so a
/// failure here is a programming error caught before release, never bad input.
#[allow(clippy::expect_used)]
pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant regular expression")
}

/// The slug grammar: lowercase ASCII words joined by single hyphens.
pub static SLUG: LazyLock<Regex> = LazyLock::new(|| re(r"^[a-z0-9]+(-[a-z0-9]+)*$"));

/// The required H2s of a lifecycle besides `## Problem`, in canonical order.
pub fn required_sections(lifecycle: &str) -> &'static [&'static str] {
    match lifecycle {
        "proposed" => &[
            "## Proposal",
            "## Alternatives considered",
            "## Acceptance criteria",
            "## Risks",
        ],
        "implemented" => &[
            "## Decision",
            "## Alternatives considered",
            "## Consequences",
        ],
        _ => &["## Proposal", "## Alternatives considered"],
    }
}

/// The status line a lifecycle folder requires.
pub fn status_ok(lifecycle: &str, line: &str) -> bool {
    match lifecycle {
        "proposed" => line == "Status: proposed",
        "implemented" => line == "Status: implemented",
        _ => line
            .strip_prefix("Status: rejected — ")
            .is_some_and(|reason| !reason.is_empty() && reason.trim() == reason),
    }
}

/// What line 3 must say in `lifecycle`, for messages.
pub fn status_hint(lifecycle: &str) -> &'static str {
    match lifecycle {
        "proposed" => "Status: proposed",
        "implemented" => "Status: implemented",
        _ => "Status: rejected — <reason>",
    }
}
