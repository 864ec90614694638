//! The crate's modules import each other in one direction only: a module never reaches, through
//! any chain of `crate::` paths, back to itself. A cycle would mean a helper lives in the
//! wrong module (it belongs in the one its users share).

use std::collections::{BTreeMap, BTreeSet};

fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let used: BTreeSet<String> = text
            .match_indices("crate::")
            .map(|(at, _)| {
                text[at + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect::<String>()
            })
            .filter(|module| !module.is_empty() && *module != name)
            .collect();
        graph.insert(name, used);
    }
    graph
}

#[test]
fn no_module_imports_itself_through_another() {
    let graph = imports();
    assert!(graph.contains_key("agent") && graph.contains_key("registry"));
    for start in graph.keys().filter(|m| *m != "lib") {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        while let Some((module, path)) = stack.pop() {
            for next in graph.get(&module).into_iter().flatten() {
                assert!(
                    next != start,
                    "an import circle: {} → {next}",
                    path.join(" → ")
                );
                if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
}
