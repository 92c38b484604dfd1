//! Loading documents, including ones written by older engines: missing structure is
//! filled in before typing, content is never changed (reference `migrate`).

use serde_json::{Map, Value, json};

use crate::document::{Debate, SCHEMA_VERSION};

/// Why a document could not be loaded. `path` is the JSON path of the bad field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("not valid JSON: {0}")]
    Syntax(String),
    #[error("the document must be a JSON object, found {0}")]
    NotAnObject(&'static str),
    #[error("{path}: {message}")]
    Field { path: String, message: String },
}

fn empty_steelman() -> Value {
    json!({"text": "", "author": "", "side": null, "status": "none", "note": "", "ts": null})
}

fn ensure_array(map: &mut Map<String, Value>, key: &str) {
    if !map.get(key).is_some_and(Value::is_array) {
        map.insert(key.to_string(), Value::Array(Vec::new()));
    }
}

fn falsy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => !b,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Number(n)) => n.as_f64().is_none_or(|x| x == 0.0 || x.is_nan()),
        _ => false,
    }
}

fn set_if_undefined(map: &mut Map<String, Value>, key: &str, v: Value) {
    if !map.contains_key(key) {
        map.insert(key.to_string(), v);
    }
}

/// Fills missing structure in place, as the reference's `migrate` does: arrays become
/// `[]`, missing steelmans become empty ones, unset nullable fields become `null`, a
/// falsy phase becomes `framing` and a falsy burden `shared`. Non-objects are left alone.
pub fn migrate_value(doc: &mut Value) {
    let Value::Object(d) = doc else { return };
    for key in [
        "threads",
        "challenges",
        "verdicts",
        "appeals",
        "definitions",
        "appealTargets",
        "log",
    ] {
        ensure_array(d, key);
    }
    if falsy(d.get("positions")) {
        d.insert("positions".into(), json!({"A": "", "B": ""}));
    }
    if falsy(d.get("steelmans")) {
        d.insert(
            "steelmans".into(),
            json!({"A": empty_steelman(), "B": empty_steelman()}),
        );
    }
    if let Some(Value::Object(s)) = d.get_mut("steelmans") {
        for side in ["A", "B"] {
            if falsy(s.get(side)) {
                s.insert(side.into(), empty_steelman());
            }
        }
    }
    set_if_undefined(d, "activeAppealId", Value::Null);
    if falsy(d.get("phase")) {
        d.insert("phase".into(), json!("framing"));
    }
    if falsy(d.get("burden")) {
        d.insert("burden".into(), json!("shared"));
    }
    set_if_undefined(d, "claimBudget", Value::Null);
    if let Some(Value::Array(threads)) = d.get_mut("threads") {
        for t in threads.iter_mut().filter_map(Value::as_object_mut) {
            ensure_array(t, "versions");
            set_if_undefined(t, "canonicalId", Value::Null);
            if let Some(Value::Array(vs)) = t.get_mut("versions") {
                for v in vs.iter_mut().filter_map(Value::as_object_mut) {
                    ensure_array(v, "evidence");
                    set_if_undefined(v, "relevance", Value::Null);
                    if falsy(v.get("status")) {
                        v.insert("status".into(), json!("candidate"));
                    }
                }
            }
        }
    }
    if let Some(Value::Array(cs)) = d.get_mut("challenges") {
        for c in cs.iter_mut().filter_map(Value::as_object_mut) {
            ensure_array(c, "evidence");
            set_if_undefined(c, "resolution", Value::Null);
            set_if_undefined(c, "appealId", Value::Null);
        }
    }
    if let Some(Value::Array(apps)) = d.get_mut("appeals") {
        for a in apps.iter_mut().filter_map(Value::as_object_mut) {
            ensure_array(a, "evidence");
            ensure_array(a, "targetThreadIds");
        }
    }
    d.insert("schemaVersion".into(), json!(SCHEMA_VERSION));
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

const KNOWN_KEYS: [&str; 17] = [
    "schemaVersion",
    "id",
    "createdAt",
    "resolution",
    "positions",
    "burden",
    "claimBudget",
    "definitions",
    "phase",
    "threads",
    "challenges",
    "steelmans",
    "verdicts",
    "appeals",
    "appealTargets",
    "activeAppealId",
    "log",
];

/// Migrates and types a parsed document. Errors name the JSON path of the bad field.
pub fn load_value(mut doc: Value) -> Result<Debate, LoadError> {
    if !doc.is_object() {
        return Err(LoadError::NotAnObject(kind_of(&doc)));
    }
    migrate_value(&mut doc);
    let extra: Map<String, Value> = doc
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !KNOWN_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let mut debate: Debate = serde_path_to_error::deserialize(doc).map_err(|e| {
        let path = e.path().to_string();
        LoadError::Field {
            path: if path == "." {
                "$".into()
            } else {
                format!("$.{path}")
            },
            message: e.into_inner().to_string(),
        }
    })?;
    debate.extra = extra;
    Ok(debate)
}

fn hex4(b: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u16::from_str_radix(s, 16).ok()
}

/// Replaces escaped lone UTF-16 surrogates (`\ud83d` without its pair) with `\ufffd`.
///
/// The reference cuts log details at 80 UTF-16 units (`slice(0, 80)`), which can split a
/// surrogate pair; `JSON.stringify` then writes the half as an escape that no Rust string
/// can hold. Borrowed unchanged when there is nothing to repair.
pub fn repair_lone_surrogates(text: &str) -> std::borrow::Cow<'_, str> {
    let b = text.as_bytes();
    let surrogate_at = |i: usize| {
        b.get(i) == Some(&b'\\')
            && b.get(i + 1) == Some(&b'u')
            && hex4(&b[(i + 2).min(b.len())..])
                .filter(|u| (0xD800..0xE000).contains(u))
                .is_some()
    };
    let mut out: Option<String> = None;
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        if b.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let unit = hex4(&b[(i + 2).min(b.len())..]);
        match unit {
            Some(u) if (0xD800..0xDC00).contains(&u) => {
                let pair = surrogate_at(i + 6)
                    && hex4(&b[i + 8..]).is_some_and(|l| (0xDC00..0xE000).contains(&l));
                if pair {
                    i += 12;
                    continue;
                }
            }
            Some(u) if (0xDC00..0xE000).contains(&u) => {}
            _ => {
                i += 2;
                continue;
            }
        }
        let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
        o.push_str(&text[copied..i]);
        o.push_str("\\ufffd");
        i += 6;
        copied = i;
    }
    match out {
        None => std::borrow::Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[copied..]);
            std::borrow::Cow::Owned(o)
        }
    }
}

/// Parses, migrates and types a document from JSON text. Lone surrogate escapes
/// written by the reference are replaced first (see [`repair_lone_surrogates`]).
pub fn load(text: &str) -> Result<Debate, LoadError> {
    let doc: Value = serde_json::from_str(&repair_lone_surrogates(text))
        .map_err(|e| LoadError::Syntax(e.to_string()))?;
    load_value(doc)
}
