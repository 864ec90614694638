//! Gates, rules, diagnostics and how a report is printed.

use std::io::{self, Write};

use serde_json::json;

/// A named family of rules, in the order `docs check` runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Gate {
    /// Files every other gate can read.
    Files,
    /// RFC placement and naming.
    RfcTree,
    /// The RFC file format.
    RfcFormat,
    /// The generated RFC index.
    RfcIndex,
    /// Bilingual pairs.
    I18n,
    /// Markdown links.
    MdLinks,
    /// Hard-wrapped paragraphs.
    MdWrap,
    /// Document references in source files.
    DocRefs,
    /// Word budgets.
    DocBudgets,
    /// The crate graph.
    Deps,
    /// Crate-root documentation and role lines.
    CrateDocs,
}

impl Gate {
    /// The documentation gates, in run order.
    pub const DOCS: [Gate; 9] = [
        Gate::Files,
        Gate::RfcTree,
        Gate::RfcFormat,
        Gate::RfcIndex,
        Gate::I18n,
        Gate::MdLinks,
        Gate::MdWrap,
        Gate::DocRefs,
        Gate::DocBudgets,
    ];

    /// The gate's id as printed.
    pub fn id(self) -> &'static str {
        match self {
            Gate::Files => "files",
            Gate::RfcTree => "rfc-tree",
            Gate::RfcFormat => "rfc-format",
            Gate::RfcIndex => "rfc-index",
            Gate::I18n => "i18n",
            Gate::MdLinks => "md-links",
            Gate::MdWrap => "md-wrap",
            Gate::DocRefs => "doc-refs",
            Gate::DocBudgets => "doc-budgets",
            Gate::Deps => "deps",
            Gate::CrateDocs => "crate-docs",
        }
    }

    /// The documentation gate with this id.
    pub fn parse_docs(id: &str) -> Option<Gate> {
        Gate::DOCS.into_iter().find(|g| g.id() == id)
    }
}

macro_rules! rules {
    ($($variant:ident => ($gate:ident, $id:literal),)*) => {
        /// One rule of one gate; its id is `gate/rule`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule {
            $(
                #[doc = concat!("`", $id, "`")]
                $variant,
            )*
        }

        impl Rule {
            /// Every rule, in catalogue order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];

            /// The gate the rule belongs to.
            pub fn gate(self) -> Gate {
                match self {
                    $(Rule::$variant => Gate::$gate,)*
                }
            }

            /// The full rule id, `gate/rule`.
            pub fn id(self) -> &'static str {
                match self {
                    $(Rule::$variant => $id,)*
                }
            }
        }
    };
}

rules! {
    FilesNotUtf8 => (Files, "files/not-utf8"),
    FilesNameNotUtf8 => (Files, "files/name-not-utf8"),
    TreeUnknownLifecycle => (RfcTree, "rfc-tree/unknown-lifecycle"),
    TreeUnknownClass => (RfcTree, "rfc-tree/unknown-class"),
    TreeDepth => (RfcTree, "rfc-tree/depth"),
    TreeFilename => (RfcTree, "rfc-tree/filename"),
    TreeInvalidDate => (RfcTree, "rfc-tree/invalid-date"),
    TreeFutureDate => (RfcTree, "rfc-tree/future-date"),
    TreeSlug => (RfcTree, "rfc-tree/slug"),
    TreeTitle => (RfcTree, "rfc-tree/title"),
    TreeStray => (RfcTree, "rfc-tree/stray"),
    TreeExtension => (RfcTree, "rfc-tree/extension"),
    TreeDuplicateSlug => (RfcTree, "rfc-tree/duplicate-slug"),
    FmtLineEndings => (RfcFormat, "rfc-format/line-endings"),
    FmtBom => (RfcFormat, "rfc-format/bom"),
    FmtTitleLine => (RfcFormat, "rfc-format/title-line"),
    FmtBlankLine2 => (RfcFormat, "rfc-format/blank-line-2"),
    FmtStatusLine => (RfcFormat, "rfc-format/status-line"),
    FmtBlankLine4 => (RfcFormat, "rfc-format/blank-line-4"),
    FmtDuplicateStatus => (RfcFormat, "rfc-format/duplicate-status"),
    FmtFirstSection => (RfcFormat, "rfc-format/first-section"),
    FmtMissingSection => (RfcFormat, "rfc-format/missing-section"),
    FmtBannedSection => (RfcFormat, "rfc-format/banned-section"),
    FmtAlternativesMissing => (RfcFormat, "rfc-format/alternatives-missing"),
    FmtAlternativesDuplicate => (RfcFormat, "rfc-format/alternatives-duplicate"),
    FmtGrandfatherTooNew => (RfcFormat, "rfc-format/grandfather-too-new"),
    FmtLegacyMarker => (RfcFormat, "rfc-format/legacy-marker"),
    FmtPlaceholder => (RfcFormat, "rfc-format/placeholder"),
    FmtZhHeader => (RfcFormat, "rfc-format/zh-header"),
    IndexStale => (RfcIndex, "rfc-index/stale"),
    IndexReadmeRow => (RfcIndex, "rfc-index/readme-row"),
    I18nRequiredMissingFile => (I18n, "i18n/required-missing-file"),
    I18nMissingCounterpart => (I18n, "i18n/missing-counterpart"),
    I18nIncompletePair => (I18n, "i18n/incomplete-pair"),
    I18nUnlistedPair => (I18n, "i18n/unlisted-pair"),
    I18nExcludedHasCounterpart => (I18n, "i18n/excluded-has-counterpart"),
    I18nExcludedHasRecord => (I18n, "i18n/excluded-has-record"),
    I18nMalformedRecord => (I18n, "i18n/malformed-record"),
    I18nOutOfSync => (I18n, "i18n/out-of-sync"),
    I18nMissingSwitcher => (I18n, "i18n/missing-switcher"),
    I18nStructure => (I18n, "i18n/structure"),
    LinksTarget => (MdLinks, "md-links/target"),
    LinksAnchor => (MdLinks, "md-links/anchor"),
    WrapHardWrap => (MdWrap, "md-wrap/hard-wrap"),
    RefsMissing => (DocRefs, "doc-refs/missing"),
    RefsAnchor => (DocRefs, "doc-refs/anchor"),
    RefsSpecId => (DocRefs, "doc-refs/spec-id"),
    BudgetOver => (DocBudgets, "doc-budgets/over"),
    BudgetMissingFile => (DocBudgets, "doc-budgets/missing-file"),
    BudgetBadCeiling => (DocBudgets, "doc-budgets/bad-ceiling"),
    DepsUnclassified => (Deps, "deps/unclassified"),
    DepsUnknownCrate => (Deps, "deps/unknown-crate"),
    DepsDefinition => (Deps, "deps/definition"),
    DepsLayer => (Deps, "deps/layer"),
    DepsProvider => (Deps, "deps/provider"),
    DepsConsumer => (Deps, "deps/consumer"),
    DepsRoot => (Deps, "deps/root"),
    DepsDevEdge => (Deps, "deps/dev-edge"),
    DepsRestricted => (Deps, "deps/restricted"),
    DepsUnused => (Deps, "deps/unused"),
    CrateDocsMissing => (CrateDocs, "crate-docs/missing"),
    CrateDocsRole => (CrateDocs, "crate-docs/role"),
}

/// One violation of one rule.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// Root-relative path with `/`; a directory ends in `/`.
    pub path: String,
    /// 1-based line, absent when no single line is responsible.
    pub line: Option<u32>,
    /// The rule violated.
    pub rule: Rule,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic of `rule` on `path`.
    pub fn new(rule: Rule, path: impl Into<String>, line: Option<u32>, message: String) -> Self {
        Diagnostic {
            rule,
            path: path.into(),
            line,
            message,
        }
    }

    /// The report order: path bytes, absent line first, rule id, message.
    fn key(&self) -> (&[u8], Option<u32>, &str, &str) {
        (
            self.path.as_bytes(),
            self.line,
            self.rule.id(),
            &self.message,
        )
    }

    /// `path[:line]: gate/rule: message`.
    pub fn human(&self) -> String {
        match self.line {
            Some(line) => format!("{}:{line}: {}: {}", self.path, self.rule.id(), self.message),
            None => format!("{}: {}: {}", self.path, self.rule.id(), self.message),
        }
    }
}

/// What one gate looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateSummary {
    /// The gate.
    pub gate: Gate,
    /// How many files it checked.
    pub checked: usize,
    /// How many diagnostics it produced.
    pub violations: usize,
}

/// The verdict of one or more gates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Every diagnostic, sorted and deduplicated by [`Report::finish`].
    pub diagnostics: Vec<Diagnostic>,
    /// One summary per gate that ran, in run order.
    pub summaries: Vec<GateSummary>,
}

impl Report {
    /// Adds a gate's findings and its summary.
    pub fn add_gate(&mut self, gate: Gate, checked: usize, diagnostics: Vec<Diagnostic>) {
        let mut diagnostics = diagnostics;
        diagnostics.sort_by(|a, b| a.key().cmp(&b.key()));
        diagnostics.dedup();
        self.summaries.push(GateSummary {
            gate,
            checked,
            violations: diagnostics.len(),
        });
        self.diagnostics.extend(diagnostics);
        self.finish();
    }

    /// Sorts into the report order and removes duplicates, so the order never depends on walk order.
    pub fn finish(&mut self) {
        self.diagnostics.sort_by(|a, b| a.key().cmp(&b.key()));
        self.diagnostics.dedup();
    }

    /// True when no gate found anything.
    pub fn is_clean(&self) -> bool {
        self.diagnostics.is_empty()
    }
}

/// How results are printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// Lines on stderr for people.
    #[default]
    Human,
    /// One JSON object per line on stdout for machines.
    Json,
}

/// Prints reports and notes in the chosen format.
pub struct Printer<'a> {
    /// The chosen format.
    pub format: Format,
    /// Suppresses summaries and notes, never diagnostics.
    pub quiet: bool,
    /// Standard output.
    pub out: &'a mut dyn Write,
    /// Standard error.
    pub err: &'a mut dyn Write,
}

impl Printer<'_> {
    /// Prints the diagnostics, then one summary per gate.
    pub fn report(&mut self, report: &Report) -> io::Result<()> {
        for d in &report.diagnostics {
            match self.format {
                Format::Human => writeln!(self.err, "{}", d.human())?,
                Format::Json => self.json(json!({
                    "type": "diagnostic",
                    "gate": d.rule.gate().id(),
                    "rule": d.rule.id(),
                    "path": d.path,
                    "line": d.line,
                    "message": d.message,
                }))?,
            }
        }
        for s in &report.summaries {
            match self.format {
                Format::Human if !self.quiet => writeln!(
                    self.err,
                    "{}: {} file(s) checked, {} violation(s)",
                    s.gate.id(),
                    s.checked,
                    s.violations
                )?,
                Format::Human => {}
                Format::Json => self.json(json!({
                    "type": "summary",
                    "gate": s.gate.id(),
                    "checked": s.checked,
                    "violations": s.violations,
                }))?,
            }
        }
        Ok(())
    }

    /// A human note on stderr (suppressed by `-q`).
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        if self.quiet {
            return Ok(());
        }
        writeln!(self.err, "{text}")
    }

    /// One JSON object on its own stdout line.
    pub fn json(&mut self, value: serde_json::Value) -> io::Result<()> {
        writeln!(self.out, "{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_name_their_gate() {
        for rule in Rule::ALL {
            let (gate, name) = rule.id().split_once('/').unwrap();
            assert_eq!(gate, rule.gate().id());
            assert!(!name.is_empty());
        }
    }

    #[test]
    fn report_sorts_by_path_then_absent_line_then_rule_and_dedups() {
        let mut report = Report::default();
        let d = |path: &str, line, rule| Diagnostic::new(rule, path, line, "m".into());
        report.add_gate(
            Gate::Deps,
            3,
            vec![
                d("b/Cargo.toml", Some(2), Rule::DepsRoot),
                d("a/Cargo.toml", Some(9), Rule::DepsProvider),
                d("a/Cargo.toml", None, Rule::DepsUnclassified),
                d("a/Cargo.toml", Some(9), Rule::DepsConsumer),
                d("b/Cargo.toml", Some(2), Rule::DepsRoot),
            ],
        );
        let lines: Vec<String> = report.diagnostics.iter().map(Diagnostic::human).collect();
        assert_eq!(
            lines,
            [
                "a/Cargo.toml: deps/unclassified: m",
                "a/Cargo.toml:9: deps/consumer: m",
                "a/Cargo.toml:9: deps/provider: m",
                "b/Cargo.toml:2: deps/root: m",
            ]
        );
        assert_eq!(report.summaries[0].violations, 4);
    }
}
