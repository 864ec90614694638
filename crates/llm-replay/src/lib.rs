//! Seam role: provider of `dsh_llm::Model` — a scripted, recorded model for tests and the offline
//! demo.
//!
//! Plays a JSON script of stream items, finishes, errors and hangs; fails loudly when a script is
//! overrun; is always labelled "replay" wherever the model is shown.
//!
//! Status: not implemented yet. The issue "Model seam and providers" fills this crate; until then
//! it exports nothing.
#![deny(missing_docs)]
