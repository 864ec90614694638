//! `docs check`: runs the documentation gates in order over one shared file index
//! and parse cache, and applies `--fix` (which only ever regenerates the RFC index).

use crate::diag::{Diagnostic, Gate, Report};
use crate::error::XtaskError;
use crate::i18n::manifest::Manifest;
use crate::repo::Repo;
use crate::rfc::index::Refresh;
use crate::rfc::{format, index, readme, tree};
use crate::{budgets, files, i18n, links, refs, wrap};

/// A gate that reads only the repository: its diagnostics and how many files it checked.
type GateFn = fn(&Repo) -> Result<(Vec<Diagnostic>, usize), XtaskError>;

/// Options of `docs check`.
#[derive(Clone, Debug, Default)]
pub struct DocsOptions {
    /// Restrict to these gates (`files` always runs; `rfc-format` and `rfc-index` bring
    /// `rfc-tree`). `None` runs them all.
    pub only: Option<Vec<Gate>>,
    /// Regenerate a stale index when the tree is clean.
    pub fix: bool,
}

/// What `docs check` did besides reporting.
#[derive(Debug, Default)]
pub struct DocsOutcome {
    pub report: Report,
    /// Set when `--fix` rewrote the index: the number of RFCs in it.
    pub wrote_index: Option<usize>,
}

fn selected(opts: &DocsOptions) -> Vec<Gate> {
    let Some(only) = &opts.only else {
        return Gate::DOCS.to_vec();
    };
    Gate::DOCS
        .into_iter()
        .filter(|g| {
            *g == Gate::Files
                || only.contains(g)
                || (*g == Gate::RfcTree
                    && (only.contains(&Gate::RfcFormat) || only.contains(&Gate::RfcIndex)))
        })
        .collect()
}

/// Runs the selected gates. Configuration errors abort before anything is reported.
pub fn run(repo: &Repo, opts: &DocsOptions) -> Result<DocsOutcome, XtaskError> {
    let gates = selected(opts);
    let wants = |g: Gate| gates.contains(&g);
    // Validate every configuration file first: a bad one means no gate output at all.
    let manifest = if wants(Gate::I18n) {
        Manifest::load(repo)?
    } else {
        Manifest::default()
    };
    if wants(Gate::DocBudgets) {
        budgets::entries(repo)?;
    }

    let mut outcome = DocsOutcome::default();
    let report = &mut outcome.report;
    let (diags, checked) = files::check(repo)?;
    report.add_gate(Gate::Files, checked, diags);

    if wants(Gate::RfcTree) {
        let tree = tree::check(repo)?;
        report.add_gate(Gate::RfcTree, tree.checked, tree.diagnostics.clone());
        if wants(Gate::RfcFormat) {
            let diags = format::check(&tree.rfcs, &tree.twins);
            report.add_gate(Gate::RfcFormat, tree.rfcs.len() + tree.twins.len(), diags);
        }
        if wants(Gate::RfcIndex) {
            let mut diags = readme::readme_rows(repo)?;
            match index::refresh(repo, &tree, opts.fix)? {
                Refresh::Stale(stale) => diags.push(stale),
                Refresh::Written(count) => outcome.wrote_index = Some(count),
                Refresh::NoTree | Refresh::TreeNotClean | Refresh::UpToDate(_) => {}
            }
            report.add_gate(Gate::RfcIndex, 1, diags);
        }
    }
    if wants(Gate::I18n) {
        let (diags, checked) = i18n::check(repo, &manifest, None)?;
        report.add_gate(Gate::I18n, checked, diags);
    }
    // The remaining gates need nothing but the repository.
    let simple: [(Gate, GateFn); 4] = [
        (Gate::MdLinks, links::check),
        (Gate::MdWrap, wrap::check),
        (Gate::DocRefs, refs::check),
        (Gate::DocBudgets, budgets::check),
    ];
    for (gate, check) in simple {
        if wants(gate) {
            let (diags, checked) = check(repo)?;
            report.add_gate(gate, checked, diags);
        }
    }
    Ok(outcome)
}
