//! A Gate request in the reference's JSON shape, `{fields, ctx}`, read with errors that
//! name the JSON path of the bad value (`fields[1].text: expected a string, found a
//! number`), so a client learns exactly what to correct.
//!
//! Tolerated as the reference tolerates them: a missing or `null` key (it behaves as
//! absent), unknown keys, an unknown `kind` string, and a non-string `ground` (which
//! matches no ground). Everything else must have its JSON type.

use serde_json::{Map, Value};

use super::{GateContext, GateField, Kind};

/// A submission to check: its fields and its context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GateRequest {
    pub fields: Vec<GateField>,
    pub ctx: GateContext,
}

/// Why a request could not be read. `path` names the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateInputError {
    #[error("not valid JSON: {0}")]
    Syntax(String),
    #[error("{path}: expected {expected}, found {found}")]
    Type {
        path: String,
        expected: &'static str,
        found: &'static str,
    },
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

fn type_error(path: String, expected: &'static str, v: &Value) -> GateInputError {
    GateInputError::Type {
        path,
        expected,
        found: kind_of(v),
    }
}

fn opt_string(
    obj: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<String>, GateInputError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(type_error(format!("{at}.{key}"), "a string", v)),
    }
}

fn opt_bool(obj: &Map<String, Value>, key: &str, at: &str) -> Result<bool, GateInputError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(type_error(format!("{at}.{key}"), "a boolean", v)),
    }
}

fn opt_number(
    obj: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<f64>, GateInputError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(v) => Err(type_error(format!("{at}.{key}"), "a number", v)),
    }
}

impl GateRequest {
    /// Reads a request from JSON text.
    ///
    /// A `\uD83D`-style escape of a lone surrogate, which JavaScript accepts and Rust
    /// strings cannot hold, is read as U+FFFD; every rule treats the two alike (neither
    /// is whitespace, a letter, a digit or a pictograph, and both are one UTF-16 unit).
    pub fn from_json(text: &str) -> Result<GateRequest, GateInputError> {
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => replace_lone_surrogates(text)
                .and_then(|fixed| serde_json::from_str(&fixed).ok())
                .ok_or_else(|| GateInputError::Syntax(e.to_string()))?,
        };
        GateRequest::from_value(&value)
    }

    /// Reads a request from a parsed JSON value.
    pub fn from_value(value: &Value) -> Result<GateRequest, GateInputError> {
        let Value::Object(top) = value else {
            return Err(type_error(
                "(request)".to_owned(),
                "an object with fields and ctx",
                value,
            ));
        };
        let fields = match top.get("fields") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| field_from_value(item, &format!("fields[{i}]")))
                .collect::<Result<_, _>>()?,
            Some(v) => return Err(type_error("fields".to_owned(), "an array", v)),
        };
        let ctx = match top.get("ctx") {
            None | Some(Value::Null) => GateContext::default(),
            Some(Value::Object(obj)) => context_from_map(obj)?,
            Some(v) => return Err(type_error("ctx".to_owned(), "an object", v)),
        };
        Ok(GateRequest { fields, ctx })
    }
}

fn field_from_value(v: &Value, at: &str) -> Result<GateField, GateInputError> {
    let Value::Object(obj) = v else {
        return Err(type_error(at.to_owned(), "an object", v));
    };
    Ok(GateField {
        name: opt_string(obj, "name", at)?,
        label: opt_string(obj, "label", at)?.unwrap_or_default(),
        text: opt_string(obj, "text", at)?.unwrap_or_default(),
        argumentative: opt_bool(obj, "argumentative", at)?,
        required: opt_bool(obj, "required", at)?,
    })
}

fn context_from_map(obj: &Map<String, Value>) -> Result<GateContext, GateInputError> {
    let at = "ctx";
    Ok(GateContext {
        kind: opt_string(obj, "kind", at)?.map_or_else(Kind::default, |k| Kind::parse(&k)),
        author: opt_string(obj, "author", at)?,
        side: opt_string(obj, "side", at)?,
        role: opt_string(obj, "role", at)?,
        type_: opt_string(obj, "type", at)?,
        qualifier: opt_string(obj, "qualifier", at)?,
        evidence_count: opt_number(obj, "evidenceCount", at)?,
        max_tier_weight: opt_number(obj, "maxTierWeight", at)?,
        ground: match obj.get("ground") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        },
    })
}

/// Rewrites `\uXXXX` escapes of unpaired surrogates inside JSON strings to `\uFFFD`.
/// Returns `None` when there is nothing to rewrite.
fn replace_lone_surrogates(text: &str) -> Option<String> {
    fn escape_at(b: &[u8], i: usize) -> Option<u16> {
        let hex = b.get(i..i + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut in_string = false;
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                in_string = !in_string;
                i += 1;
            }
            b'\\' if in_string => {
                let Some(unit) = escape_at(b, i) else {
                    i += 2;
                    continue;
                };
                let high = (0xD800..0xDC00).contains(&unit);
                let low = (0xDC00..0xE000).contains(&unit);
                if high && escape_at(b, i + 6).is_some_and(|u| (0xDC00..0xE000).contains(&u)) {
                    i += 12;
                } else if high || low {
                    out.push_str(&text[copied..i]);
                    out.push_str("\\uFFFD");
                    i += 6;
                    copied = i;
                    changed = true;
                } else {
                    i += 6;
                }
            }
            _ => i += 1,
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}
