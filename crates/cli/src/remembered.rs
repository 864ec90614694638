//! The "always" answers a user gave, remembered per project in the data directory
//! (`permission-rules.jsonl`), never in the repository: a rule a model could write into the
//! project would let it allow itself.
//!
//! The file is append-only, one JSON object a line: `{"project","rule"}` remembers,
//! `{"project","rule","removed":true}` forgets. Two dsh processes appending at once cannot
//! lose each other's line (each is one `O_APPEND` write), and `dsh permissions rm` needs no
//! rewrite. A line that does not read is skipped.
//!
//! A project is the nearest directory at or above the session's that holds `.git`, else the
//! session's directory itself.

use std::io::Write;
use std::path::{Path, PathBuf};

use dsh_tools::RememberedRules;
use serde::{Deserialize, Serialize};

/// The file's name under the data directory.
pub const FILE: &str = "permission-rules.jsonl";

/// One line of the file.
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    project: String,
    rule: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    removed: bool,
}

/// The remembered rules of one data directory.
#[derive(Debug)]
pub struct RuleFile {
    path: PathBuf,
}

impl RuleFile {
    /// The file under `data_dir`.
    pub fn new(data_dir: &Path) -> RuleFile {
        RuleFile {
            path: data_dir.join(FILE),
        }
    }

    /// Every project's rules, in the order they were first remembered.
    pub fn all(&self) -> Vec<(String, Vec<String>)> {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let mut projects: Vec<(String, Vec<String>)> = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(line) = serde_json::from_str::<Line>(line) else {
                tracing::warn!("a line of {} does not read; skipped", self.path.display());
                continue;
            };
            let at = match projects.iter().position(|(p, _)| *p == line.project) {
                Some(at) => at,
                None => {
                    projects.push((line.project.clone(), Vec::new()));
                    projects.len() - 1
                }
            };
            let rules = &mut projects[at].1;
            rules.retain(|rule| *rule != line.rule);
            if !line.removed {
                rules.push(line.rule);
            }
        }
        projects.retain(|(_, rules)| !rules.is_empty());
        projects
    }

    /// The rules of `project`.
    pub fn of_project(&self, project: &Path) -> Vec<String> {
        let key = project.to_string_lossy();
        self.all()
            .into_iter()
            .find(|(p, _)| *p == key)
            .map(|(_, rules)| rules)
            .unwrap_or_default()
    }

    /// Forgets `rule` of `project`.
    pub fn forget(&self, project: &Path, rule: &str) -> Result<(), String> {
        self.append(&Line {
            project: project.to_string_lossy().into_owned(),
            rule: rule.to_owned(),
            removed: true,
        })
    }

    fn append(&self, line: &Line) -> Result<(), String> {
        let failed = |e: std::io::Error| format!("{} cannot be written: {e}", self.path.display());
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        let mut text = serde_json::to_string(line).map_err(|e| e.to_string())?;
        text.push('\n');
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(failed)
    }
}

impl RememberedRules for RuleFile {
    fn rules(&self, cwd: &Path) -> Vec<String> {
        self.of_project(&project_of(cwd))
    }

    fn remember(&self, cwd: &Path, rule: &str) -> Result<PathBuf, String> {
        let project = project_of(cwd);
        if !self.of_project(&project).iter().any(|r| r == rule) {
            self.append(&Line {
                project: project.to_string_lossy().into_owned(),
                rule: rule.to_owned(),
                removed: false,
            })?;
        }
        Ok(project)
    }
}

/// The project `cwd` belongs to: the nearest directory at or above it holding `.git`, else
/// `cwd` itself (made absolute and canonical where it can be).
pub fn project_of(cwd: &Path) -> PathBuf {
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(&cwd)
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_kept_per_project_and_forgotten_by_a_later_line() {
        let data = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let repo = work.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        let other = work.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        let file = RuleFile::new(data.path());
        let project = file.remember(&repo.join("src/deep"), "bash(cargo test:*)");
        assert_eq!(project.unwrap(), repo.canonicalize().unwrap());
        file.remember(&repo, "bash(cargo test:*)").unwrap();
        file.remember(&repo, "edit").unwrap();
        file.remember(&other, "bash(make:*)").unwrap();
        assert_eq!(file.rules(&repo), ["bash(cargo test:*)", "edit"]);
        assert_eq!(file.rules(&other), ["bash(make:*)"]);
        std::fs::write(
            data.path().join(FILE),
            std::fs::read_to_string(data.path().join(FILE)).unwrap() + "not json\n",
        )
        .unwrap();
        file.forget(&repo.canonicalize().unwrap(), "bash(cargo test:*)")
            .unwrap();
        assert_eq!(file.rules(&repo.join("src")), ["edit"]);
        assert_eq!(file.all().len(), 2);
    }
}
