//! The public half of an exam pool: what a coordinator may publish before an exam, so that
//! arbiters can be asked and the asking checked, while every gold answer stays secret until
//! the answer key is revealed (docs/CALIBRATION.md, "Sealed pools").
//!
//! A [`PublicPool`] keeps each item's id, kind, question and motion text, the unit of a
//! quantity, the probe group and the objective flag: everything an arbiter is shown and
//! everything [`crate::exam_draw`] draws by. It drops the gold and the source (which names
//! the gold), and with them the quantity's scale and frozen range. Its id,
//! [`PublicPool::id`], is SHA-256 over [`PUBLIC_POOL_DOMAIN`] and the canonical JSON
//! ([`crate::canonical_json`]) of the pool, so it can be published: unlike the exam's
//! content hash it commits to no gold. The answer-key commitment
//! ([`crate::answer_key::commit_answer_key`]) binds the golds; [`PublicPool::of`] on the
//! revealed exam must give back the published pool, which binds the questions.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::canonical_json::write_canonical;
use crate::exam::{Exam, ExamItem, Gold, Probe, ProbeVariant};

/// Domain tag of a public pool's id.
pub const PUBLIC_POOL_DOMAIN: &str = "crucible-panel/exam/public-pool/v1\n";

/// Bounds a published pool must keep, so that a pool on the log cannot grow a replica
/// without bound.
pub const MAX_POOL_ITEMS: usize = 2_000;
/// Longest item text (question or motion) in bytes.
pub const MAX_ITEM_TEXT: usize = 16 * 1024;

/// The kind of an item's answer ([`Gold::kind`] without the gold).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Binary,
    Relevance,
    Tier,
    Quantity,
}

impl ItemKind {
    /// The kind of a gold answer.
    pub fn of(gold: &Gold) -> Self {
        match gold {
            Gold::Binary(_) => ItemKind::Binary,
            Gold::Relevance(_) => ItemKind::Relevance,
            Gold::Tier(_) => ItemKind::Tier,
            Gold::Quantity { .. } => ItemKind::Quantity,
        }
    }

    /// The name used in the exam file (`binary`, `relevance`, `tier`, `quantity`).
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Binary => "binary",
            ItemKind::Relevance => "relevance",
            ItemKind::Tier => "tier",
            ItemKind::Quantity => "quantity",
        }
    }
}

/// One item as an arbiter may see it before the key is revealed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublicItem {
    pub id: String,
    pub kind: ItemKind,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub motion: Option<String>,
    /// A quantity's unit: the arbiter answers in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Probe>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub objective: bool,
    /// Other wordings an arbiter may be shown instead ([`crate::phrasing`]); a pool
    /// without them keeps the id it had before they existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phrasings: Vec<crate::phrasing::Phrasing>,
}

impl PublicItem {
    /// The public half of one exam item.
    pub fn of(i: &ExamItem) -> Self {
        PublicItem {
            id: i.id.clone(),
            kind: ItemKind::of(&i.gold),
            question: i.question.clone(),
            motion: i.motion.clone(),
            unit: match &i.gold {
                Gold::Quantity { unit, .. } => Some(unit.clone()),
                _ => None,
            },
            probe: i.probe.clone(),
            objective: i.objective,
            phrasings: i.phrasings.clone(),
        }
    }

    /// The wording an arbiter whose draw seed is `seed` is shown ([`crate::phrasing::pick`]).
    pub fn wording(&self, seed: u64) -> crate::phrasing::Wording<'_> {
        crate::phrasing::wording(
            &self.question,
            self.motion.as_deref(),
            &self.phrasings,
            crate::phrasing::pick(seed, &self.id, self.phrasings.len()),
        )
    }
}

/// The public half of an exam pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublicPool {
    pub name: String,
    pub version: String,
    pub quantiles: Vec<f64>,
    pub items: Vec<PublicItem>,
}

/// Why a published pool is refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PoolError {
    #[error("the pool has {0} items; a pool holds 1 to {MAX_POOL_ITEMS}")]
    Size(usize),
    #[error("item {index} has an empty id: give every item an id")]
    EmptyId { index: usize },
    #[error("item id `{0}` appears twice: ids are unique within a pool")]
    DuplicateId(String),
    #[error("item `{id}`'s {field} is {len} bytes; at most {MAX_ITEM_TEXT}")]
    TooLong {
        id: String,
        field: &'static str,
        len: usize,
    },
    #[error("item `{0}` carries a probe but is not binary: probes mark binary questions")]
    ProbeNotBinary(String),
    #[error("the pool cannot be encoded as JSON ({0}), so it has no id; use plain values")]
    Unencodable(String),
    #[error("probe group `{group}` has two `{variant}` items: give each variant once")]
    VariantTwice {
        group: String,
        variant: &'static str,
    },
    #[error("probe group `{0}` has no base item")]
    NoBase(String),
    #[error(
        "item `{0}` is marked objective but is not binary or is a probe variant: mark binary bases only"
    )]
    Objective(String),
    #[error(
        "item `{0}` is a quantity without a unit, or another kind with one: a unit belongs to quantities"
    )]
    Unit(String),
    #[error("the pool's quantile levels {0:?} are not strictly increasing levels in (0, 1)")]
    Quantiles(Vec<f64>),
    #[error(
        "item `{0}`'s phrasings do not check: at most {max} non-empty wordings, each with a \
         motion text exactly when the item has one, and none on a probe item",
        max = crate::phrasing::MAX_PHRASINGS
    )]
    Phrasings(String),
}

/// One probe group of a public pool: its objective flag (the base's) and its members,
/// base first, in [`ProbeVariant::ALL`] order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicGroup {
    pub id: String,
    pub objective: bool,
    pub members: Vec<String>,
}

impl PublicPool {
    /// The public half of `exam`.
    pub fn of(exam: &Exam) -> Self {
        PublicPool {
            name: exam.name.clone(),
            version: exam.version.clone(),
            quantiles: exam.quantiles.clone(),
            items: exam.items.iter().map(PublicItem::of).collect(),
        }
    }

    /// `sha256:<hex>` over [`PUBLIC_POOL_DOMAIN`] and the pool's canonical JSON; an error,
    /// never the id of an empty document, when the pool cannot be encoded.
    pub fn id(&self) -> Result<String, PoolError> {
        let value =
            serde_json::to_value(self).map_err(|e| PoolError::Unencodable(e.to_string()))?;
        let mut canonical = String::new();
        write_canonical(&value, &mut canonical);
        let mut h = Sha256::new();
        h.update(PUBLIC_POOL_DOMAIN.as_bytes());
        h.update(canonical.as_bytes());
        Ok(format!("sha256:{}", hex::encode(h.finalize())))
    }

    pub fn item(&self, id: &str) -> Option<&PublicItem> {
        self.items.iter().find(|i| i.id == id)
    }

    /// Checks what [`crate::exam::load_exam`] checks of the parts a pool publishes: a pool
    /// taken from the log is untrusted until its key is revealed.
    pub fn validate(&self) -> Result<(), PoolError> {
        if self.items.is_empty() || self.items.len() > MAX_POOL_ITEMS {
            return Err(PoolError::Size(self.items.len()));
        }
        let levels_ok = !self.quantiles.is_empty()
            && self.quantiles.windows(2).all(|w| w[0] < w[1])
            && self.quantiles.iter().all(|q| *q > 0.0 && *q < 1.0);
        if !levels_ok {
            return Err(PoolError::Quantiles(self.quantiles.clone()));
        }
        let mut ids = BTreeSet::new();
        for (index, item) in self.items.iter().enumerate() {
            check_item(index, item)?;
            if !ids.insert(item.id.as_str()) {
                return Err(PoolError::DuplicateId(item.id.clone()));
            }
        }
        self.groups().map(|_| ())
    }

    /// The probe groups in order of their first item, each checked: binary members, each
    /// variant once, a base.
    pub fn groups(&self) -> Result<Vec<PublicGroup>, PoolError> {
        let mut order: Vec<&str> = Vec::new();
        let mut members: BTreeMap<&str, BTreeMap<ProbeVariant, &PublicItem>> = BTreeMap::new();
        for item in &self.items {
            let Some(probe) = &item.probe else { continue };
            if item.kind != ItemKind::Binary {
                return Err(PoolError::ProbeNotBinary(item.id.clone()));
            }
            let group = members.entry(probe.group.as_str()).or_insert_with(|| {
                order.push(probe.group.as_str());
                BTreeMap::new()
            });
            if group.insert(probe.variant, item).is_some() {
                return Err(PoolError::VariantTwice {
                    group: probe.group.clone(),
                    variant: probe.variant.name(),
                });
            }
        }
        order
            .into_iter()
            .map(|id| {
                let group = &members[id];
                let base = group
                    .get(&ProbeVariant::Base)
                    .ok_or_else(|| PoolError::NoBase(id.to_string()))?;
                Ok(PublicGroup {
                    id: id.to_string(),
                    objective: base.objective,
                    members: ProbeVariant::ALL
                        .iter()
                        .filter_map(|v| group.get(v).map(|i| i.id.clone()))
                        .collect(),
                })
            })
            .collect()
    }

    /// How many items of `kind` the pool holds.
    pub fn count(&self, kind: ItemKind) -> usize {
        self.items.iter().filter(|i| i.kind == kind).count()
    }
}

fn check_item(index: usize, item: &PublicItem) -> Result<(), PoolError> {
    if item.id.is_empty() {
        return Err(PoolError::EmptyId { index });
    }
    let texts = [
        ("id", item.id.len()),
        ("question", item.question.len()),
        ("motion", item.motion.as_ref().map_or(0, String::len)),
        ("unit", item.unit.as_ref().map_or(0, String::len)),
        (
            "probe group",
            item.probe.as_ref().map_or(0, |p| p.group.len()),
        ),
    ];
    if let Some((field, len)) = texts.into_iter().find(|(_, len)| *len > MAX_ITEM_TEXT) {
        return Err(PoolError::TooLong {
            id: item.id.chars().take(64).collect(),
            field,
            len,
        });
    }
    let is_variant = item
        .probe
        .as_ref()
        .is_some_and(|p| p.variant != ProbeVariant::Base);
    if item.objective && (item.kind != ItemKind::Binary || is_variant) {
        return Err(PoolError::Objective(item.id.clone()));
    }
    if (item.kind == ItemKind::Quantity) != item.unit.is_some() {
        return Err(PoolError::Unit(item.id.clone()));
    }
    check_phrasings(item)
}

/// What [`crate::phrasing::parse`] checks of an item's wordings, for a pool from the log.
fn check_phrasings(item: &PublicItem) -> Result<(), PoolError> {
    let p = &item.phrasings;
    let bad = p.len() > crate::phrasing::MAX_PHRASINGS
        || (item.probe.is_some() && !p.is_empty())
        || p.iter()
            .any(|w| w.question.trim().is_empty() || w.motion.is_some() != item.motion.is_some());
    if bad {
        return Err(PoolError::Phrasings(item.id.clone()));
    }
    let long = p.iter().flat_map(|w| {
        [
            ("phrasing question", w.question.len()),
            ("phrasing motion", w.motion.as_ref().map_or(0, String::len)),
        ]
    });
    match long.into_iter().find(|(_, len)| *len > MAX_ITEM_TEXT) {
        Some((field, len)) => Err(PoolError::TooLong {
            id: item.id.chars().take(64).collect(),
            field,
            len,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exam::load_exam;

    const V2: &str = include_str!("../../exams/default-v2.jsonl");

    #[test]
    fn the_public_half_keeps_no_gold_and_no_source() {
        let exam = load_exam(V2).expect("v2 loads");
        let public = PublicPool::of(&exam);
        public
            .validate()
            .expect("the public half of a loaded exam checks");
        let text = serde_json::to_string(&public).unwrap();
        assert!(!text.contains("\"gold\""));
        assert!(!text.contains("\"source\""));
        assert!(!text.contains("\"range\""));
        for item in &exam.items {
            assert!(!text.contains(&item.source), "source of {} leaked", item.id);
        }
        assert_eq!(public.groups().unwrap().len(), 10);
        assert_eq!(public.count(ItemKind::Quantity), 13);
    }

    #[test]
    fn the_id_changes_with_any_published_field_and_not_with_gold() {
        let exam = load_exam(V2).expect("v2 loads");
        let id = PublicPool::of(&exam).id().expect("encodes");
        let mut flipped = exam.clone();
        if let Gold::Binary(b) = &mut flipped.items[0].gold {
            *b = !*b;
        }
        assert_eq!(
            PublicPool::of(&flipped).id().expect("encodes"),
            id,
            "the id commits to no gold"
        );
        let mut reworded = PublicPool::of(&exam);
        reworded.items[3].question.push('?');
        assert_ne!(reworded.id().expect("encodes"), id);
    }

    #[test]
    fn a_malformed_pool_is_refused_by_name() {
        let exam = load_exam(V2).expect("v2 loads");
        let good = PublicPool::of(&exam);
        let mut twice = good.clone();
        twice.items[1].id = twice.items[0].id.clone();
        assert!(matches!(twice.validate(), Err(PoolError::DuplicateId(_))));
        let mut baseless = good.clone();
        let base = baseless
            .items
            .iter()
            .position(|i| {
                i.probe
                    .as_ref()
                    .is_some_and(|p| p.variant == ProbeVariant::Base)
            })
            .unwrap();
        baseless.items.remove(base);
        assert!(matches!(baseless.validate(), Err(PoolError::NoBase(_))));
        let mut unitless = good.clone();
        let q = unitless
            .items
            .iter()
            .position(|i| i.kind == ItemKind::Quantity)
            .unwrap();
        unitless.items[q].unit = None;
        assert!(matches!(unitless.validate(), Err(PoolError::Unit(_))));
        let mut long = good.clone();
        long.items[0].question = "x".repeat(MAX_ITEM_TEXT + 1);
        assert!(matches!(long.validate(), Err(PoolError::TooLong { .. })));
        let mut empty = good;
        empty.items.clear();
        assert_eq!(empty.validate(), Err(PoolError::Size(0)));
    }
}
