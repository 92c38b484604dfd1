//! No file of the machine is in an import cycle, and none imports a layer above its own
//! (docs/ARCHITECTURE.md "Layers of the machine"): wire types and rows sit below the behaviour that takes `&mut State`, so a
//! reader can take the files in order, and a change to a feature cannot reach back into
//! the rows it stands on.
//!
//! The test reads `machine/src` as text: a file imports another when its code (comments
//! and its `#[cfg(test)] mod tests` left out) names a path `crate::a::b::…` or `super::…`
//! whose longest prefix is one of the crate's modules. Then it looks for strongly
//! connected files (Tarjan) and fails naming every cycle and the imports that make it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read machine/src") {
        let p = entry.expect("dir entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `apply/motions.rs` -> `apply::motions`, `model/mod.rs` -> `model`, `lib.rs` -> ``.
fn module_of(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_owned());
    }
    parts.join("::")
}

/// The code of a file without comments and without its unit-test module.
fn code(text: &str) -> String {
    let test_module = [
        "#[cfg(test)]\nmod tests",
        "#[cfg(test)]\npub(crate) mod tests",
    ]
    .iter()
    .filter_map(|m| text.find(m))
    .min();
    let text = match test_module {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Paths `crate::x::y` / `super::x` in `code`, as module segments relative to the crate
/// root, plus the first segment of each item of a `use crate::{a, b::c}` group.
fn paths(module: &str, code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for anchor in ["crate::", "super::"] {
        let mut at = 0;
        while let Some(i) = code[at..].find(anchor) {
            let start = at + i;
            at = start + anchor.len();
            if start > 0 && code[..start].chars().next_back().is_some_and(ident) {
                continue;
            }
            let rest = &code[at..];
            if anchor == "crate::" && rest.starts_with('{') {
                let end = rest.find('}').unwrap_or(rest.len());
                for item in rest[1..end].split(',') {
                    let first: String = item.trim().chars().take_while(|c| ident(*c)).collect();
                    if !first.is_empty() {
                        out.push(vec![first]);
                    }
                }
                continue;
            }
            let mut segments = Vec::new();
            let mut s = rest;
            loop {
                let seg: String = s.chars().take_while(|c| ident(*c)).collect();
                if seg.is_empty() {
                    break;
                }
                s = &s[seg.len()..];
                segments.push(seg);
                match s.strip_prefix("::") {
                    Some(t) => s = t,
                    None => break,
                }
            }
            if anchor == "super::" {
                let mut parent: Vec<String> = module.split("::").map(str::to_owned).collect();
                parent.pop();
                parent.extend(segments);
                segments = parent;
            }
            out.push(segments);
        }
    }
    out
}

/// Tarjan's strongly connected components with more than one member.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let lw = self.low[w.as_str()];
                    let lv = self.low[v];
                    self.low.insert(v, lv.min(lw));
                } else if self.on.contains(w.as_str()) {
                    let iw = self.index[w.as_str()];
                    let lv = self.low[v];
                    self.low.insert(v, lv.min(iw));
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    comp.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.found.push(comp);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let texts: BTreeMap<String, String> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("read a source file");
            (module_of(&root, f), code(&text))
        })
        .collect();
    let modules: BTreeSet<&str> = texts.keys().map(String::as_str).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &texts {
        let to = edges.entry(module.clone()).or_default();
        for path in paths(module, code) {
            let target = (1..=path.len())
                .rev()
                .map(|k| path[..k].join("::"))
                .find(|m| modules.contains(m.as_str()));
            if let Some(t) = target.filter(|t| t != module) {
                to.insert(t);
            }
        }
    }
    edges
}

#[test]
fn no_file_of_the_machine_is_in_an_import_cycle() {
    let edges = import_graph();
    assert!(edges.len() > 40, "read only {} files", edges.len());
    let found = cycles(&edges);
    let explain: Vec<String> = found
        .iter()
        .map(|comp| {
            let inside: Vec<String> = comp
                .iter()
                .flat_map(|a| {
                    edges[a]
                        .iter()
                        .filter(|b| comp.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            format!("{} files: {}", comp.len(), inside.join(", "))
        })
        .collect();
    assert!(
        found.is_empty(),
        "import cycles in machine/src (move the shared type down, to log/ or model/, or the \
         behaviour up):\n{}",
        explain.join("\n")
    );
}

/// The layer of a module (docs/ARCHITECTURE.md "Layers of the machine"), from the bottom;
/// `None` for the crate root and the test kit, which stand outside the layers.
fn layer(module: &str) -> Option<u8> {
    match module.split("::").next()? {
        "rules" => Some(1),
        "log" | "command" | "debates" | "runs" | "authorship" => Some(2),
        "model" => Some(3),
        "reply" => Some(4),
        "features" => Some(5),
        "apply" => Some(6),
        "read" => Some(7),
        _ => None,
    }
}

/// No file names a module of a higher layer (test-only files aside): the folders are the
/// layers, so a reader takes them bottom up and a change above cannot reach below.
#[test]
fn no_file_imports_a_layer_above_its_own() {
    let edges = import_graph();
    let upward: Vec<String> = edges
        .iter()
        .filter(|(from, _)| !from.ends_with("tests"))
        .flat_map(|(from, to)| {
            to.iter()
                .filter_map(move |target| match (layer(from), layer(target)) {
                    (Some(a), Some(b)) if b > a => {
                        Some(format!("{from} (layer {a}) -> {target} (layer {b})"))
                    }
                    _ => None,
                })
        })
        .collect();
    assert!(
        upward.is_empty(),
        "imports up the machine's layers (move the shared item down, or the caller up):\n{}",
        upward.join("\n")
    );
    assert_eq!(layer("rules::acceptance"), Some(1));
    assert_eq!(layer("features::limits"), Some(5));
}

#[test]
fn the_reader_finds_a_cycle_when_there_is_one() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.insert("a".into(), ["b".to_string()].into());
    edges.insert("b".into(), ["c".to_string()].into());
    edges.insert("c".into(), ["a".to_string()].into());
    edges.insert("d".into(), ["a".to_string()].into());
    assert_eq!(cycles(&edges), vec![vec!["a", "b", "c"]]);
    // Paths: `super::` from a child resolves to its parent's siblings.
    let p = paths(
        "apply::motions",
        "use super::error::ApplyError; x = crate::model::motion::Motion; use crate::{log, rules};",
    );
    assert!(p.contains(&vec!["apply".into(), "error".into(), "ApplyError".into()]));
    assert!(p.contains(&vec!["model".into(), "motion".into(), "Motion".into()]));
    assert!(p.contains(&vec!["log".into()]) && p.contains(&vec!["rules".into()]));
}
