//! The JSONL provider passes the shared contract suite.

use std::path::Path;
use std::sync::Arc;

use dsh_session::{SessionId, SessionPersistence};
use dsh_session_jsonl::{JsonlConfig, JsonlPersistence};
use dsh_test_providers::persistence_contract::{Harness, run};

pub struct Jsonl;

/// The log file of `id`, wherever its project directory is.
pub fn log_path(dir: &Path, id: &SessionId) -> Option<std::path::PathBuf> {
    let prefix = id.as_str().to_owned();
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .find_map(|project| {
            let candidate = project.path().join(format!("{prefix}.jsonl"));
            candidate.is_file().then_some(candidate)
        })
}

impl Harness for Jsonl {
    fn provider(&self, dir: &Path) -> Arc<dyn SessionPersistence> {
        JsonlPersistence::new(JsonlConfig::new(dir)).unwrap()
    }

    fn records(&self, dir: &Path, id: &SessionId) -> Option<(Vec<Vec<u8>>, Vec<u8>)> {
        let bytes = std::fs::read(log_path(dir, id)?).ok()?;
        let mut records: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
        let trailing = records.pop().unwrap_or_default();
        Some((records, trailing))
    }

    fn write_records(&self, dir: &Path, id: &SessionId, records: &[Vec<u8>], trailing: &[u8]) {
        let path = log_path(dir, id).expect("a stored log");
        let mut bytes = Vec::new();
        for record in records {
            bytes.extend_from_slice(record);
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(trailing);
        std::fs::write(path, bytes).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_passes_the_persistence_contract() {
    run(&Jsonl).await;
}
