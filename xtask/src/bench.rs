//! A synthetic repository for the gates' speed budgets: RFCs spread over lifecycles and classes,
//! each with links and code blocks, a fresh index, other documents, pairs and Rust sources.

use std::path::Path;

use crate::error::XtaskError;
use crate::i18n::record::{blob_id, canonical};
use crate::rfc::tree::Rfc;
use crate::rfc::{CLASSES, LIFECYCLES, index, required_sections, status_hint};

/// The shape of the generated corpus.
#[derive(Clone, Debug)]
pub struct CorpusSpec {
    /// Number of RFCs (about 120 lines each).
    pub rfcs: usize,
    /// Number of other documents.
    pub documents: usize,
    /// Number of translated pairs.
    pub pairs: usize,
    /// Number of Rust source files (200 lines each).
    pub sources: usize,
}

impl Default for CorpusSpec {
    fn default() -> Self {
        CorpusSpec {
            rfcs: 200,
            documents: 40,
            pairs: 10,
            sources: 300,
        }
    }
}

/// The documentation folder of the synthetic repository.
const DOCS: &str = "docs";

fn put(root: &Path, rel: &str, text: &str) -> Result<(), XtaskError> {
    let path = root.join(rel);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| XtaskError::io(rel, e))?;
    }
    std::fs::write(&path, text).map_err(|e| XtaskError::io(rel, e))
}

/// Writes the corpus into `dir`, which passes every documentation gate.
pub fn synthetic_repo(dir: &Path, spec: &CorpusSpec) -> Result<(), XtaskError> {
    let mut rfcs = Vec::new();
    for n in 0..spec.rfcs {
        let lifecycle = LIFECYCLES[n % 2]; // proposed and implemented
        let class = CLASSES[n % CLASSES.len()];
        let date = crate::date::Date::from_days(19_000 + n as i64);
        let file = format!("{date}-topic-{n}.md");
        let mut text = format!("# RFC: Topic {n}\n\n{}\n\n", status_hint(lifecycle));
        for (s, section) in std::iter::once("## Problem")
            .chain(required_sections(lifecycle).iter().copied())
            .enumerate()
        {
            text.push_str(&format!("{section}\n\n"));
            for line in 0..4 {
                text.push_str(&format!(
                    "Paragraph {line} of section {s}, which links [the readme](../../README.md) and [this file](#problem) once.\n\n"
                ));
            }
            if s < 2 {
                text.push_str("```rust\nfn example() -> u32 {\n    42\n}\n```\n\n");
            }
        }
        let path = format!("docs/rfc/{lifecycle}/{class}/{file}");
        put(dir, &path, &text)?;
        rfcs.push(Rfc {
            path,
            lifecycle,
            class,
            file,
            date,
            title: format!("Topic {n}"),
            text: text.into(),
        });
    }
    put(
        dir,
        "docs/rfc/README.md",
        "# RFCs\n\nSee [the index](INDEX.md).\n",
    )?;
    put(dir, "docs/rfc/INDEX.md", &index::render(&rfcs))?;
    for n in 0..spec.documents {
        put(
            dir,
            &format!("docs/guide-{n}.md"),
            &format!("# Guide {n}\n\n## Usage\n\nSee [the RFCs](rfc/README.md).\n"),
        )?;
    }
    let mut required = Vec::new();
    for n in 0..spec.pairs {
        let en = format!("docs/pair-{n}.md");
        let zh = format!("docs/pair-{n}.zh.md");
        let en_text =
            format!("# Pair {n}\n\nEnglish | [中文](pair-{n}.zh.md)\n\n## Part\n\nText.\n");
        let zh_text = format!("# 对 {n}\n\n[English](pair-{n}.md) | 中文\n\n## 部分\n\n文本。\n");
        put(dir, &en, &en_text)?;
        put(dir, &zh, &zh_text)?;
        let record = canonical(
            &en,
            &blob_id(en_text.as_bytes()),
            &blob_id(zh_text.as_bytes()),
        );
        put(dir, &format!("docs/pair-{n}.i18n.yaml"), &record)?;
        required.push(format!("\"{en}\""));
    }
    put(
        dir,
        "xtask/pairs.toml",
        &format!(
            "required = [{}]\nexcluded = [\"docs/rfc/INDEX.md\"]\n",
            required.join(", ")
        ),
    )?;
    // Paths are assembled from `DOCS` so the doc-refs gate does not read them as citations.
    put(
        dir,
        "README.md",
        &format!("# Synthetic\n\nSee [guide]({DOCS}/guide-0.md).\n"),
    )?;
    for n in 0..spec.sources {
        let mut text = String::from("//! A generated source file.\n");
        for line in 0..199 {
            text.push_str(&format!(
                "// line {line}: see {DOCS}/guide-0.md#usage for details\n"
            ));
        }
        put(dir, &format!("src/m{n}.rs"), &text)?;
    }
    Ok(())
}
