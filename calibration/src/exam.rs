//! The calibration exam: a versioned, content-hashed JSONL file of motions with gold
//! answers and the source of each gold answer.
//!
//! Line 1 is the header:
//! `{"exam": "<name>", "version": "<semver>", "quantiles": [0.05, 0.5, 0.95],
//!   "overshoot": 0.1, "description": "..."}`.
//! Every further non-blank line is one item with `id`, `kind`, `question`, `gold`, `source`
//! and optional `motion` (the material the arbiter judges), `tags`:
//!
//! | kind | gold | the arbiter answers |
//! |---|---|---|
//! | `binary` | `true` / `false` | a probability that the answer is yes |
//! | `relevance` | 0.25, 0.5, 0.75 or 1.0 (SPEC sections 3.3 and 9) | one of those steps |
//! | `tier` | `"T1"` ... `"T5"` (SPEC section 5) | a tier |
//! | `quantity` | the realised number; also `unit`, `scale` (`uni`/`log`), `range` `[lo, hi]` frozen before scoring | `[q5, q50, q95]` |
//!
//! Content hash: SHA-256 over the UTF-8 bytes of `crucible-panel/exam/v1\n` followed by the
//! canonical form (see [`crate::canonical_json`]) of the header and of each item in file
//! order, each followed by `\n`. Blank lines, whitespace and key order do not change it; any
//! change of a value does. Printed as `sha256:<64 hex digits>`.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::canonical_json::write_canonical;
use crate::cooke::{Scale, validate_levels};

/// Domain tag of the exam content hash.
pub const EXAM_HASH_DOMAIN: &str = "crucible-panel/exam/v1\n";

/// The relevance steps of the Crucible rubric (SPEC sections 3.3 and 9).
pub const RELEVANCE_STEPS: [f64; 4] = [0.25, 0.5, 0.75, 1.0];

/// A line-level error in an exam or answers file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}, field `{field}`: {message}")]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// JSON path of the offending field (`$` for the whole line).
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl LineError {
    pub fn new(line: usize, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            line,
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Evidence tier (SPEC section 5): T1 strongest (weight 5) to T5 (weight 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Tier {
    T1,
    T2,
    T3,
    T4,
    T5,
}

impl Tier {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "T1" => Tier::T1,
            "T2" => Tier::T2,
            "T3" => Tier::T3,
            "T4" => Tier::T4,
            "T5" => Tier::T5,
            _ => return None,
        })
    }

    /// Rubric weight: T1 5 ... T5 1.
    pub fn weight(self) -> f64 {
        5.0 - self.index() as f64
    }

    /// Ordinal index 0 (T1) ... 4 (T5).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The gold answer of an item, by kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Gold {
    Binary(bool),
    Relevance(f64),
    Tier(Tier),
    Quantity {
        value: f64,
        unit: String,
        scale: Scale,
        /// Background range frozen before scoring, natural units, before overshoot.
        range: (f64, f64),
    },
}

impl Gold {
    pub fn kind(&self) -> &'static str {
        match self {
            Gold::Binary(_) => "binary",
            Gold::Relevance(_) => "relevance",
            Gold::Tier(_) => "tier",
            Gold::Quantity { .. } => "quantity",
        }
    }
}

/// One exam item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExamItem {
    pub id: String,
    pub question: String,
    pub motion: Option<String>,
    pub gold: Gold,
    pub source: String,
    pub tags: Vec<String>,
    /// Line of the item in the file.
    pub line: usize,
}

/// A loaded exam.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exam {
    pub name: String,
    pub version: String,
    pub quantiles: Vec<f64>,
    pub overshoot: f64,
    pub description: String,
    pub items: Vec<ExamItem>,
    /// `sha256:<hex>` over the canonical bytes (module docs).
    pub content_hash: String,
}

impl Exam {
    pub fn item(&self, id: &str) -> Option<&ExamItem> {
        self.items.iter().find(|i| i.id == id)
    }

    pub fn count(&self, kind: &str) -> usize {
        self.items.iter().filter(|i| i.gold.kind() == kind).count()
    }
}

fn field<'a>(obj: &'a Map<String, Value>, line: usize, name: &str) -> Result<&'a Value, LineError> {
    obj.get(name).ok_or_else(|| {
        LineError::new(
            line,
            format!("$.{name}"),
            format!("missing: add `\"{name}\"`"),
        )
    })
}

fn string_field(obj: &Map<String, Value>, line: usize, name: &str) -> Result<String, LineError> {
    match field(obj, line, name)? {
        Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        Value::String(_) => Err(LineError::new(
            line,
            format!("$.{name}"),
            "is empty: write a non-empty string",
        )),
        other => Err(LineError::new(
            line,
            format!("$.{name}"),
            format!("must be a string, found {}", json_type(other)),
        )),
    }
}

fn number_field(obj: &Map<String, Value>, line: usize, name: &str) -> Result<f64, LineError> {
    match field(obj, line, name)? {
        Value::Number(n) => n
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| LineError::new(line, format!("$.{name}"), "is not a finite number")),
        other => Err(LineError::new(
            line,
            format!("$.{name}"),
            format!("must be a number, found {}", json_type(other)),
        )),
    }
}

/// Human name of a JSON type, for error messages.
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parse one JSONL line into an object, with a line-numbered error.
pub fn parse_object(text: &str, line: usize) -> Result<Map<String, Value>, LineError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(LineError::new(
            line,
            "$",
            format!("must be a JSON object, found {}", json_type(&other)),
        )),
        Err(e) => Err(LineError::new(
            line,
            "$",
            format!("not valid JSON ({e}): write one JSON object per line"),
        )),
    }
}

fn parse_item(obj: &Map<String, Value>, line: usize) -> Result<ExamItem, LineError> {
    let id = string_field(obj, line, "id")?;
    let kind = string_field(obj, line, "kind")?;
    let question = string_field(obj, line, "question")?;
    let source = string_field(obj, line, "source")?;
    let motion = match obj.get("motion") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(LineError::new(
                line,
                "$.motion",
                format!("must be a string, found {}", json_type(other)),
            ));
        }
    };
    let tags = match obj.get("tags") {
        None => Vec::new(),
        Some(Value::Array(xs)) => xs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| LineError::new(line, format!("$.tags[{i}]"), "must be a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(LineError::new(
                line,
                "$.tags",
                format!("must be an array of strings, found {}", json_type(other)),
            ));
        }
    };
    let gold_value = field(obj, line, "gold")?;
    let gold = match kind.as_str() {
        "binary" => match gold_value {
            Value::Bool(b) => Gold::Binary(*b),
            other => {
                return Err(LineError::new(
                    line,
                    "$.gold",
                    format!(
                        "a binary item's gold must be true or false, found {}",
                        json_type(other)
                    ),
                ));
            }
        },
        "relevance" => {
            let v = number_field(obj, line, "gold")?;
            if !RELEVANCE_STEPS.contains(&v) {
                return Err(LineError::new(
                    line,
                    "$.gold",
                    format!("relevance {v} is not a rubric step: use 0.25, 0.5, 0.75 or 1.0"),
                ));
            }
            Gold::Relevance(v)
        }
        "tier" => {
            let s = gold_value.as_str().unwrap_or("");
            Gold::Tier(Tier::parse(s).ok_or_else(|| {
                LineError::new(
                    line,
                    "$.gold",
                    "a tier item's gold must be one of \"T1\" ... \"T5\"",
                )
            })?)
        }
        "quantity" => {
            let value = number_field(obj, line, "gold")?;
            let unit = string_field(obj, line, "unit")?;
            let scale = match string_field(obj, line, "scale")?.as_str() {
                "uni" => Scale::Uni,
                "log" => Scale::Log,
                other => {
                    return Err(LineError::new(
                        line,
                        "$.scale",
                        format!("`{other}` is not a scale: use \"uni\" or \"log\""),
                    ));
                }
            };
            let range = match field(obj, line, "range")? {
                Value::Array(xs) if xs.len() == 2 => {
                    let lo = xs[0].as_f64().filter(|x| x.is_finite());
                    let hi = xs[1].as_f64().filter(|x| x.is_finite());
                    match (lo, hi) {
                        (Some(lo), Some(hi)) if lo < hi => (lo, hi),
                        _ => {
                            return Err(LineError::new(
                                line,
                                "$.range",
                                "must be [lo, hi] with finite numbers and lo < hi",
                            ));
                        }
                    }
                }
                _ => {
                    return Err(LineError::new(
                        line,
                        "$.range",
                        "must be a two-element array [lo, hi] frozen before scoring",
                    ));
                }
            };
            if scale == Scale::Log && (range.0 <= 0.0 || value <= 0.0) {
                return Err(LineError::new(
                    line,
                    "$.range",
                    "a log-scale item needs a positive range and a positive gold value",
                ));
            }
            Gold::Quantity {
                value,
                unit,
                scale,
                range,
            }
        }
        other => {
            return Err(LineError::new(
                line,
                "$.kind",
                format!("`{other}` is not an item kind: use binary, relevance, tier or quantity"),
            ));
        }
    };
    Ok(ExamItem {
        id,
        question,
        motion,
        gold,
        source,
        tags,
        line,
    })
}

/// Load an exam from JSONL text. The first error stops the load; it names the line and
/// the field.
pub fn load_exam(text: &str) -> Result<Exam, LineError> {
    let mut hasher = Sha256::new();
    hasher.update(EXAM_HASH_DOMAIN.as_bytes());
    let mut canonical = String::new();
    let mut header: Option<(String, String, Vec<f64>, f64, String)> = None;
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let obj = parse_object(raw, line)?;
        canonical.clear();
        write_canonical(&Value::Object(obj.clone()), &mut canonical);
        canonical.push('\n');
        hasher.update(canonical.as_bytes());
        if header.is_none() {
            if !obj.contains_key("exam") {
                return Err(LineError::new(
                    line,
                    "$.exam",
                    "the first line must be the exam header with \"exam\", \"version\", \"quantiles\"",
                ));
            }
            let name = string_field(&obj, line, "exam")?;
            let version = string_field(&obj, line, "version")?;
            let quantiles = match field(&obj, line, "quantiles")? {
                Value::Array(xs) => xs
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        x.as_f64().ok_or_else(|| {
                            LineError::new(line, format!("$.quantiles[{i}]"), "must be a number")
                        })
                    })
                    .collect::<Result<Vec<f64>, _>>()?,
                _ => {
                    return Err(LineError::new(
                        line,
                        "$.quantiles",
                        "must be an array such as [0.05, 0.5, 0.95]",
                    ));
                }
            };
            validate_levels(&quantiles)
                .map_err(|e| LineError::new(line, "$.quantiles", e.to_string()))?;
            let overshoot = match obj.get("overshoot") {
                None => crate::cooke::DEFAULT_OVERSHOOT,
                Some(_) => number_field(&obj, line, "overshoot")?,
            };
            if overshoot < 0.0 {
                return Err(LineError::new(
                    line,
                    "$.overshoot",
                    "must be >= 0 (Cooke's default is 0.1)",
                ));
            }
            let description = obj
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            header = Some((name, version, quantiles, overshoot, description));
            continue;
        }
        let item = parse_item(&obj, line)?;
        if !seen.insert(item.id.clone()) {
            return Err(LineError::new(
                line,
                "$.id",
                format!(
                    "item id `{}` is used twice: give every item a distinct id",
                    item.id
                ),
            ));
        }
        items.push(item);
    }
    let Some((name, version, quantiles, overshoot, description)) = header else {
        return Err(LineError::new(
            1,
            "$",
            "the exam is empty: the first line must be the header",
        ));
    };
    if items.is_empty() {
        return Err(LineError::new(1, "$", "the exam has a header but no items"));
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(Exam {
        name,
        version,
        quantiles,
        overshoot,
        description,
        items,
        content_hash: format!("sha256:{hex}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"exam":"t","version":"1","quantiles":[0.05,0.5,0.95]}"#;

    #[test]
    fn hash_ignores_layout_but_not_values() {
        let a = format!(
            "{HEADER}\n{}\n",
            r#"{"id":"a","kind":"binary","question":"q","gold":true,"source":"s"}"#
        );
        let b = format!(
            "{HEADER}\n\n{}\n",
            r#"{ "source": "s", "gold": true, "question": "q", "kind": "binary", "id": "a" }"#
        );
        let c = format!(
            "{HEADER}\n{}\n",
            r#"{"id":"a","kind":"binary","question":"q","gold":false,"source":"s"}"#
        );
        let (ea, eb, ec) = (
            load_exam(&a).unwrap(),
            load_exam(&b).unwrap(),
            load_exam(&c).unwrap(),
        );
        assert_eq!(ea.content_hash, eb.content_hash);
        assert_ne!(ea.content_hash, ec.content_hash);
        assert!(ea.content_hash.starts_with("sha256:") && ea.content_hash.len() == 71);
    }

    #[test]
    fn errors_name_line_and_field() {
        let bad_gold = format!(
            "{HEADER}\n{}\n",
            r#"{"id":"a","kind":"relevance","question":"q","gold":0.6,"source":"s"}"#
        );
        let e = load_exam(&bad_gold).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "$.gold"));
        let no_source = format!(
            "{HEADER}\n\n{}\n",
            r#"{"id":"a","kind":"binary","question":"q","gold":true}"#
        );
        let e = load_exam(&no_source).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (3, "$.source"));
        let dup = format!(
            "{HEADER}\n{0}\n{0}\n",
            r#"{"id":"a","kind":"binary","question":"q","gold":true,"source":"s"}"#
        );
        assert_eq!(load_exam(&dup).unwrap_err().line, 3);
        let range = format!(
            "{HEADER}\n{}\n",
            r#"{"id":"a","kind":"quantity","question":"q","gold":3,"unit":"m","scale":"uni","range":[5,1],"source":"s"}"#
        );
        assert_eq!(load_exam(&range).unwrap_err().field, "$.range");
        assert_eq!(load_exam("{\"id\":1").unwrap_err().field, "$");
        assert_eq!(load_exam("").unwrap_err().line, 1);
    }
}
