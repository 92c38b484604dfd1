//! Other wordings of one exam item (docs/CALIBRATION.md "Phrasings").
//!
//! An exam item may list `"phrasings": [{"question": ..., "motion": ...}, ...]`: the same
//! question put in other words, with the same gold. A sitting asks each arbiter one wording
//! of each item it draws ([`pick`]), so the text an arbiter sees differs between arbiters
//! and sittings where the pool allows, and a judge that matches texts against a leaked or
//! earlier pool finds fewer of them. The wordings are part of the pool (hashed with it and
//! published in its public half); only which one an arbiter gets is per sitting.
//!
//! Probe items cannot carry phrasings: a probe group measures how an answer moves when
//! only the presentation changes, and a second, unplanned change of wording would be
//! counted as bias.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::exam::LineError;

/// At most this many other wordings per item, so that a pool stays bounded.
pub const MAX_PHRASINGS: usize = 8;

/// Domain tag of the wording choice.
pub const PICK_DOMAIN: &str = "crucible-panel/exam/phrasing/v1\n";

/// One other wording of an item's question and, if it has one, its motion text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phrasing {
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub motion: Option<String>,
}

/// The wording an arbiter is shown: the item's own (`None`) or one of its phrasings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wording<'a> {
    pub question: &'a str,
    pub motion: Option<&'a str>,
}

/// Which wording of an item with `count` phrasings the arbiter whose draw seed is `seed`
/// gets: 0 is the item as written, `n` its `n`-th phrasing. A hash of the seed and the
/// item id, so every replica and `panel verify` re-derive it, and arbiters with different
/// keys (or one arbiter in different sittings) get different wordings.
pub fn pick(seed: u64, item_id: &str, count: usize) -> usize {
    if count == 0 {
        return 0;
    }
    let mut h = Sha256::new();
    h.update(PICK_DOMAIN.as_bytes());
    h.update(seed.to_be_bytes());
    h.update((item_id.len() as u64).to_be_bytes());
    h.update(item_id.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    (u64::from_be_bytes(b) % (count as u64 + 1)) as usize
}

/// The wording `n` of an item written as `question` and `motion` with `phrasings`
/// (0 or out of range: as written).
pub fn wording<'a>(
    question: &'a str,
    motion: Option<&'a str>,
    phrasings: &'a [Phrasing],
    n: usize,
) -> Wording<'a> {
    match n.checked_sub(1).and_then(|i| phrasings.get(i)) {
        Some(p) => Wording {
            question: &p.question,
            motion: p.motion.as_deref(),
        },
        None => Wording { question, motion },
    }
}

/// Parses an item's `phrasings` field (absent: none). `has_motion` says whether the item
/// has a motion text: a phrasing rewords what the item shows, so it has one exactly when
/// the item does.
pub fn parse(
    obj: &Map<String, Value>,
    line: usize,
    has_motion: bool,
) -> Result<Vec<Phrasing>, LineError> {
    let list = match obj.get("phrasings") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(xs)) => xs,
        Some(_) => {
            return Err(LineError::new(
                line,
                "$.phrasings",
                "must be an array of {\"question\": ..., \"motion\": ...} objects",
            ));
        }
    };
    if list.len() > MAX_PHRASINGS {
        return Err(LineError::new(
            line,
            "$.phrasings",
            format!(
                "has {} wordings; an item carries at most {MAX_PHRASINGS}",
                list.len()
            ),
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, v)| parse_one(v, line, i, has_motion))
        .collect()
}

fn parse_one(v: &Value, line: usize, i: usize, has_motion: bool) -> Result<Phrasing, LineError> {
    let path = format!("$.phrasings[{i}]");
    let Value::Object(o) = v else {
        return Err(LineError::new(
            line,
            path,
            "must be an object {\"question\": ..., \"motion\": ...}",
        ));
    };
    if let Some(k) = o
        .keys()
        .find(|k| !matches!(k.as_str(), "question" | "motion"))
    {
        return Err(LineError::new(
            line,
            format!("{path}.{k}"),
            "is not a phrasing field: a phrasing has only `question` and `motion`",
        ));
    }
    let text = |name: &str| match o.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(LineError::new(
            line,
            format!("{path}.{name}"),
            "must be a non-empty string",
        )),
    };
    let question = text("question")?.ok_or_else(|| {
        LineError::new(
            line,
            format!("{path}.question"),
            "is missing: every phrasing rewords the question",
        )
    })?;
    let motion = text("motion")?;
    if motion.is_some() != has_motion {
        return Err(LineError::new(
            line,
            format!("{path}.motion"),
            if has_motion {
                "is missing: the item shows a motion text, so each phrasing rewords it too"
            } else {
                "is given but the item shows no motion text: drop it"
            },
        ));
    }
    Ok(Phrasing { question, motion })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn wordings_parse_and_bad_ones_name_their_path() {
        let ok = parse(
            &obj(r#"{"phrasings": [{"question": "Q2", "motion": "M2"}]}"#),
            3,
            true,
        )
        .unwrap();
        assert_eq!(ok[0].motion.as_deref(), Some("M2"));
        for (json, has_motion, path) in [
            (r#"{"phrasings": 3}"#, false, "$.phrasings"),
            (
                r#"{"phrasings": [{"motion": "M"}]}"#,
                true,
                "$.phrasings[0].question",
            ),
            (
                r#"{"phrasings": [{"question": "Q"}]}"#,
                true,
                "$.phrasings[0].motion",
            ),
            (
                r#"{"phrasings": [{"question": "Q", "motion": "M"}]}"#,
                false,
                "$.phrasings[0].motion",
            ),
            (
                r#"{"phrasings": [{"question": "Q", "gold": true}]}"#,
                false,
                "$.phrasings[0].gold",
            ),
            (
                r#"{"phrasings": [{"question": ""}]}"#,
                false,
                "$.phrasings[0].question",
            ),
        ] {
            let e = parse(&obj(json), 3, has_motion).unwrap_err();
            assert_eq!(e.field, path, "{json}");
        }
        let many = format!(
            r#"{{"phrasings": [{}]}}"#,
            [r#"{"question": "Q"}"#; MAX_PHRASINGS + 1].join(",")
        );
        assert_eq!(
            parse(&obj(&many), 1, false).unwrap_err().field,
            "$.phrasings"
        );
    }

    #[test]
    fn every_wording_is_picked_and_the_pick_is_stable() {
        let mut seen = [0usize; 4];
        for seed in 0..400u64 {
            let n = pick(seed, "bin-1", 3);
            assert_eq!(n, pick(seed, "bin-1", 3));
            seen[n] += 1;
        }
        assert!(seen.iter().all(|&c| c > 50), "{seen:?}");
        assert_eq!(pick(7, "bin-1", 0), 0);
        let p = [Phrasing {
            question: "Q2".into(),
            motion: None,
        }];
        assert_eq!(wording("Q", None, &p, 1).question, "Q2");
        assert_eq!(wording("Q", None, &p, 0).question, "Q");
        assert_eq!(wording("Q", None, &p, 5).question, "Q");
    }
}
