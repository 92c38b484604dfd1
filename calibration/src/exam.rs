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
//!
//! Bias probes (docs/CALIBRATION.md, "Bias probes and a committed answer key"): a binary
//! item may carry `"probe": {"group": "<id>", "variant": "base" | "order_swapped" |
//! "padded" | "consequence"}`. The items of one group ask the same binary question, so they
//! share one gold; the variants differ from the base only in presentation (the two sides in
//! the other order, irrelevant added length, an added sentence about the verdict's
//! consequences), and any difference in the answers is bias. A binary item may also carry
//! `"objective": true`, marking the objective-correctness subset (on a probe group, the base
//! carries it for the whole group). Both fields are part of the item's JSON, so they are
//! hashed like every other field; an item without them hashes exactly as before.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    /// The bias probe this item belongs to, if any (binary items only).
    pub probe: Option<Probe>,
    /// Part of the objective-correctness subset: the gold follows from a checkable fact or
    /// an explicit SPEC rule rather than from judgement (binary items only).
    pub objective: bool,
    /// Other wordings of the question, with the same gold ([`crate::phrasing`]).
    pub phrasings: Vec<crate::phrasing::Phrasing>,
    /// Line of the item in the file.
    pub line: usize,
}

/// How a probe item presents its group's question (docs/CALIBRATION.md, "Bias probes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeVariant {
    /// The question as written; every group has exactly one.
    Base,
    /// The two sides in the other order; the gold is still the content's answer.
    OrderSwapped,
    /// The base with irrelevant added length.
    Padded,
    /// The base with an added sentence stating a consequence of the verdict.
    Consequence,
}

impl ProbeVariant {
    /// Every variant, in the order groups list them.
    pub const ALL: [ProbeVariant; 4] = [
        ProbeVariant::Base,
        ProbeVariant::OrderSwapped,
        ProbeVariant::Padded,
        ProbeVariant::Consequence,
    ];

    /// The name used in the exam file.
    pub fn name(self) -> &'static str {
        match self {
            ProbeVariant::Base => "base",
            ProbeVariant::OrderSwapped => "order_swapped",
            ProbeVariant::Padded => "padded",
            ProbeVariant::Consequence => "consequence",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == s)
    }
}

/// An item's place in a probe group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub group: String,
    pub variant: ProbeVariant,
}

/// One probe group, resolved to item ids. [`Exam::probe_groups`] builds and checks them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeGroup {
    pub id: String,
    /// The group's shared gold answer.
    pub gold: bool,
    /// The base's `objective` flag, which stands for the whole group.
    pub objective: bool,
    pub base: String,
    pub order_swapped: Option<String>,
    pub padded: Option<String>,
    pub consequence: Option<String>,
}

impl ProbeGroup {
    /// The item of `variant`, if the group has one.
    pub fn member(&self, variant: ProbeVariant) -> Option<&str> {
        match variant {
            ProbeVariant::Base => Some(self.base.as_str()),
            ProbeVariant::OrderSwapped => self.order_swapped.as_deref(),
            ProbeVariant::Padded => self.padded.as_deref(),
            ProbeVariant::Consequence => self.consequence.as_deref(),
        }
    }

    /// Every item of the group, base first.
    pub fn members(&self) -> impl Iterator<Item = &str> {
        ProbeVariant::ALL.into_iter().filter_map(|v| self.member(v))
    }
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

    /// The probe groups in order of their first item, checked as at load (every group has
    /// one base, each variant at most once, one gold, binary items only, `objective` only
    /// on the base). [`load_exam`] has already run this check; it is repeated here because
    /// an `Exam` can also be built by hand.
    pub fn probe_groups(&self) -> Result<Vec<ProbeGroup>, LineError> {
        probe_groups(&self.items)
    }
}

/// Group the probe items of `items` and check every group (see [`Exam::probe_groups`]).
/// One error is returned, with its line: the first per-item error in file order (a probe
/// on a non-binary item, a variant given twice, `objective` on a variant), else the group
/// error (no base, a gold that differs from the base's) on the lowest line.
pub fn probe_groups(items: &[ExamItem]) -> Result<Vec<ProbeGroup>, LineError> {
    struct Draft<'a> {
        first: &'a ExamItem,
        members: BTreeMap<ProbeVariant, &'a ExamItem>,
    }
    let mut order: Vec<&str> = Vec::new();
    let mut drafts: BTreeMap<&str, Draft<'_>> = BTreeMap::new();
    for item in items {
        let Some(probe) = &item.probe else {
            continue;
        };
        if !matches!(item.gold, Gold::Binary(_)) {
            return Err(LineError::new(
                item.line,
                "$.probe",
                format!(
                    "a probe marks a binary question; a {} item cannot carry one",
                    item.gold.kind()
                ),
            ));
        }
        let draft = drafts.entry(probe.group.as_str()).or_insert_with(|| {
            order.push(probe.group.as_str());
            Draft {
                first: item,
                members: BTreeMap::new(),
            }
        });
        if let Some(other) = draft.members.insert(probe.variant, item) {
            return Err(LineError::new(
                item.line,
                "$.probe.variant",
                format!(
                    "group `{}` already has a `{}` item (`{}`, line {}): give each variant once per group",
                    probe.group,
                    probe.variant.name(),
                    other.id,
                    other.line
                ),
            ));
        }
        if item.objective && probe.variant != ProbeVariant::Base {
            return Err(LineError::new(
                item.line,
                "$.objective",
                format!(
                    "objectivity belongs to the question: mark the base of group `{}`, not its `{}` item",
                    probe.group,
                    probe.variant.name()
                ),
            ));
        }
    }
    let mut groups = Vec::with_capacity(order.len());
    let mut errors: Vec<LineError> = Vec::new();
    for id in order {
        let draft = &drafts[id];
        let Some(base) = draft.members.get(&ProbeVariant::Base) else {
            errors.push(LineError::new(
                draft.first.line,
                "$.probe.group",
                format!(
                    "group `{id}` has no base item: mark the unaltered question `\"variant\": \"base\"`"
                ),
            ));
            continue;
        };
        let Gold::Binary(gold) = base.gold else {
            continue; // refused above
        };
        for member in draft.members.values() {
            if member.gold != base.gold {
                errors.push(LineError::new(
                    member.line,
                    "$.gold",
                    format!(
                        "group `{id}` asks one question, but this item's gold differs from its base `{}` (line {}): a variant changes the presentation, never the answer",
                        base.id, base.line
                    ),
                ));
            }
        }
        let member = |v: ProbeVariant| draft.members.get(&v).map(|i| i.id.clone());
        groups.push(ProbeGroup {
            id: id.to_string(),
            gold,
            objective: base.objective,
            base: base.id.clone(),
            order_swapped: member(ProbeVariant::OrderSwapped),
            padded: member(ProbeVariant::Padded),
            consequence: member(ProbeVariant::Consequence),
        });
    }
    match errors.into_iter().min_by_key(|e| e.line) {
        Some(e) => Err(e),
        None => Ok(groups),
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
    let objective = match obj.get("objective") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(LineError::new(
                line,
                "$.objective",
                format!("must be true or false, found {}", json_type(other)),
            ));
        }
    };
    let probe = match obj.get("probe") {
        None | Some(Value::Null) => None,
        Some(Value::Object(p)) => Some(parse_probe(p, line)?),
        Some(other) => {
            return Err(LineError::new(
                line,
                "$.probe",
                format!(
                    "must be an object {{\"group\": ..., \"variant\": ...}}, found {}",
                    json_type(other)
                ),
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
    if !matches!(gold, Gold::Binary(_)) {
        if probe.is_some() {
            return Err(LineError::new(
                line,
                "$.probe",
                format!(
                    "a probe marks a binary question; a {} item cannot carry one",
                    gold.kind()
                ),
            ));
        }
        if objective {
            return Err(LineError::new(
                line,
                "$.objective",
                format!(
                    "marks binary items for objective-subset accuracy; a {} item cannot carry it",
                    gold.kind()
                ),
            ));
        }
    }
    let phrasings = crate::phrasing::parse(obj, line, motion.is_some())?;
    if probe.is_some() && !phrasings.is_empty() {
        return Err(LineError::new(
            line,
            "$.phrasings",
            "a probe item measures one change of presentation, so it cannot carry other \
             wordings: drop `phrasings` or `probe`",
        ));
    }
    Ok(ExamItem {
        id,
        question,
        motion,
        gold,
        source,
        tags,
        probe,
        objective,
        phrasings,
        line,
    })
}

fn parse_probe(p: &Map<String, Value>, line: usize) -> Result<Probe, LineError> {
    if let Some(key) = p
        .keys()
        .find(|k| !matches!(k.as_str(), "group" | "variant"))
    {
        return Err(LineError::new(
            line,
            format!("$.probe.{key}"),
            "is not a probe field: a probe has only \"group\" and \"variant\"",
        ));
    }
    let group = match p.get("group") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) => {
            return Err(LineError::new(
                line,
                "$.probe.group",
                "is empty: name the group its variants share",
            ));
        }
        Some(other) => {
            return Err(LineError::new(
                line,
                "$.probe.group",
                format!("must be a string, found {}", json_type(other)),
            ));
        }
        None => {
            return Err(LineError::new(
                line,
                "$.probe.group",
                "missing: add `\"group\"`, the id its variants share",
            ));
        }
    };
    let variant = match p.get("variant") {
        Some(Value::String(s)) => ProbeVariant::parse(s).ok_or_else(|| {
            LineError::new(
                line,
                "$.probe.variant",
                format!(
                    "`{s}` is not a probe variant: use base, order_swapped, padded or consequence"
                ),
            )
        })?,
        Some(other) => {
            return Err(LineError::new(
                line,
                "$.probe.variant",
                format!("must be a string, found {}", json_type(other)),
            ));
        }
        None => {
            return Err(LineError::new(
                line,
                "$.probe.variant",
                "missing: add `\"variant\"` (base, order_swapped, padded or consequence)",
            ));
        }
    };
    Ok(Probe { group, variant })
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
    probe_groups(&items)?;
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
