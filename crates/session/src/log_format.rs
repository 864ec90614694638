//! The log format every provider stores, byte for byte: a header line, then one event record
//! a line in the envelope encoding. The JSONL provider keeps it in a file; another provider
//! keeps the same records (so a log moves between stores losslessly, and a load judges and
//! repairs it by the same rule whatever holds it).

pub mod header;
pub mod scan;
pub mod verdict;
