//! dsh-agent-loop's integration suite: the real loop over the real session store (and the
//! JSONL provider where durability matters), a scripted model, and small real tools.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cancel;
mod claims;
mod compaction;
mod containment;
mod context;
mod edges;
mod guards;
mod hooks;
mod modules;
mod ownership;
mod progress;
mod property;
mod races;
mod shutdown;
mod support;
mod teardown;
mod tools;
mod turns;
