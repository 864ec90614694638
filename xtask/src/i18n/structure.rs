//! Structural signatures of a pair: headings, code blocks, tables and links must
//! line up one for one; prose is never compared.

use crate::md::{Doc, LinkKind, cut};

/// One field of the signature: its name and `(value, line)` per element.
pub struct Field {
    pub name: &'static str,
    pub items: Vec<(String, u32)>,
}

/// The signature of `doc`, ignoring links to `counterpart` (the language switcher).
pub fn signature(doc: &Doc, counterpart: &str) -> Vec<Field> {
    vec![
        Field {
            name: "heading",
            items: doc
                .headings
                .iter()
                .map(|h| (h.depth.to_string(), h.line))
                .collect(),
        },
        Field {
            name: "code block",
            items: doc
                .code
                .iter()
                .map(|c| (format!("{} {}\n{}", c.lang, c.rest, c.body), c.line))
                .collect(),
        },
        Field {
            name: "table",
            items: doc.tables.clone(),
        },
        Field {
            name: "link",
            items: doc
                .links
                .iter()
                .filter(|l| l.kind != LinkKind::Definition && l.dest != counterpart)
                .map(|l| (l.dest.clone(), l.line))
                .collect(),
        },
    ]
}

/// The first divergence of each field, as `(field, ordinal, English element line, message)`.
pub fn compare(english: &[Field], twin: &[Field], twin_path: &str) -> Vec<(Option<u32>, String)> {
    let mut out = Vec::new();
    for (en, zh) in english.iter().zip(twin) {
        let len = en.items.len().max(zh.items.len());
        for k in 0..len {
            let (a, b) = (en.items.get(k), zh.items.get(k));
            if a.map(|x| &x.0) == b.map(|x| &x.0) {
                continue;
            }
            let show = |item: Option<&(String, u32)>| match item {
                Some((value, _)) => cut(&serde_json::to_string(value).unwrap_or_default(), 72),
                None => "nothing".to_owned(),
            };
            let at = match b {
                Some((_, line)) => format!("{twin_path}:{line}"),
                None => twin_path.to_owned(),
            };
            out.push((
                a.map(|x| x.1),
                format!(
                    "{} #{}: {} here, {} at {at}",
                    en.name,
                    k + 1,
                    show(a),
                    show(b)
                ),
            ));
            break;
        }
    }
    out
}
