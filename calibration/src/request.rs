//! The requests of `panel calibrate --jsonl` (docs/CALIBRATION.md, section 8): one JSON
//! object per line, `{"binary": {...}}`, `{"calibration_counts": {...}}`, `{"cooke": {...}}`
//! or `{"bridging": {...}}`, answered by one [`Response`] per line.
//!
//! [`answer_line`] does one line end to end (bytes, JSON, request, computation, response),
//! so the CLI only reads, calls and prints. Decoding goes through `serde_path_to_error`, and
//! the checks that need more than one field run after it with the path written out, so
//! every refusal names the JSON path at fault and the fix; the CLI prints it as
//! `{"error": "line N: <JSON path>: <problem and fix>"}` (see
//! [`ErrorResponse`](crate::response::ErrorResponse)).

use std::collections::HashMap;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess};
use serde_json::Value;
use thiserror::Error;

use crate::bridging::{BridgingConfig, fit_matrix};
use crate::cooke::{
    Alpha, Assessment, CookeModel, DEFAULT_OVERSHOOT, Item, LEVELS_5_50_95, Scale,
    calibration_score, validate_levels,
};
use crate::error::CalibrationError;
use crate::request_field::{
    Count, Entries, Finite, Id, List, LossName, Object, Outcome, Probability, ScaleName, Seed,
    Shape, deserialize_shape, present,
};
use crate::response::{
    BinaryResponse, BridgingResponse, CalibrationCountsResponse, CookeResponse, Response,
};
use crate::scoring_rules::binary_report;

/// The request kinds, as listed in every "use one of" hint.
const KINDS: &str = "binary, calibration_counts, cooke, bridging";

/// Why a request line is answered with `{"error": ...}` instead of a response. The
/// `Display` text is `<JSON path>: <problem and fix>`; [`ErrorResponse`] adds the line.
///
/// [`ErrorResponse`]: crate::response::ErrorResponse
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RequestError {
    /// The line is not UTF-8 (JSON text must be).
    #[error("$: not valid UTF-8: send UTF-8 JSON")]
    NotUtf8,
    /// The line is not JSON (serde_json's message, with the column).
    #[error("$: not valid JSON ({0}): send one JSON object per line")]
    NotJson(String),
    /// A value in the request has the wrong kind, is out of range, is missing or does not
    /// fit the other values.
    #[error("{path}: {problem}")]
    Malformed { path: String, problem: String },
    /// The request is well formed but the computation refused it (no seed answered, an
    /// alpha above every calibration score, ...). `path` is the request body.
    #[error("{path}: {source}")]
    Rejected {
        path: String,
        source: CalibrationError,
    },
}

impl RequestError {
    fn malformed(path: impl Into<String>, problem: impl Into<String>) -> Self {
        RequestError::Malformed {
            path: path.into(),
            problem: problem.into(),
        }
    }

    fn rejected(path: &str) -> impl FnOnce(CalibrationError) -> Self + '_ {
        move |source| RequestError::Rejected {
            path: path.to_string(),
            source,
        }
    }

    /// The JSON path of the offending value (`$` for the whole line).
    pub fn path(&self) -> &str {
        match self {
            RequestError::NotUtf8 | RequestError::NotJson(_) => "$",
            RequestError::Malformed { path, .. } | RequestError::Rejected { path, .. } => path,
        }
    }
}

type Result<T> = std::result::Result<T, RequestError>;

/// Answers one stdin line of `panel calibrate --jsonl`: `None` for a blank line (skipped
/// without output), otherwise the response or the reason there is none. A trailing `\r`
/// is dropped, so CRLF input works.
pub fn answer_line(raw: &[u8]) -> Option<Result<Response>> {
    let Ok(line) = std::str::from_utf8(raw) else {
        return Some(Err(RequestError::NotUtf8));
    };
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.trim().is_empty() {
        return None;
    }
    Some(Request::decode(line).and_then(Request::answer))
}

/// A decoded request: the single key of the line's object names the kind.
#[derive(Debug)]
pub enum Request {
    Binary(BinaryRequest),
    CalibrationCounts(CalibrationCountsRequest),
    Cooke(CookeRequest),
    Bridging(BridgingRequest),
}

impl Request {
    /// Parses one line. The JSON is parsed into a [`Value`] first: a syntax error is told
    /// apart from a bad value, serde_json's recursion limit refuses absurd nesting, and
    /// messages about values carry no "at line 1 column N" (the path locates them).
    pub fn decode(line: &str) -> Result<Request> {
        let value: Value =
            serde_json::from_str(line).map_err(|e| RequestError::NotJson(e.to_string()))?;
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            RequestError::Malformed {
                // serde_path_to_error writes the root as "." and the rest as "a.b[0]".
                path: if path == "." {
                    "$".to_string()
                } else {
                    format!("$.{path}")
                },
                problem: e.into_inner().to_string(),
            }
        })
    }

    /// Runs the computation the request asks for.
    pub fn answer(self) -> Result<Response> {
        match self {
            Request::Binary(r) => r.answer().map(Response::Binary),
            Request::CalibrationCounts(r) => r.answer().map(Response::CalibrationCounts),
            Request::Cooke(r) => r.answer().map(Response::Cooke),
            Request::Bridging(r) => r.answer().map(Response::Bridging),
        }
    }
}

impl<'de> Shape<'de> for Request {
    const WANT: &'static str = "an object such as {\"binary\": {...}}";

    fn from_map<A: MapAccess<'de>>(mut map: A) -> std::result::Result<Self, A::Error> {
        let one_key = |n: usize| {
            de::Error::custom(format_args!(
                "must have exactly one key (the request kind), found {n}: use one of {KINDS}"
            ))
        };
        if let Some(n) = map.size_hint().filter(|&n| n != 1) {
            return Err(one_key(n));
        }
        let Some(kind) = map.next_key::<String>()? else {
            return Err(one_key(0));
        };
        let request = match kind.as_str() {
            "binary" => Request::Binary(map.next_value::<Object<_>>()?.0),
            "calibration_counts" => Request::CalibrationCounts(map.next_value::<Object<_>>()?.0),
            "cooke" => Request::Cooke(map.next_value::<Object<_>>()?.0),
            "bridging" => Request::Bridging(map.next_value::<Object<_>>()?.0),
            other => {
                return Err(de::Error::custom(format_args!(
                    "unknown request `{other}`: use one of {KINDS}"
                )));
            }
        };
        // Only reached when the input gave no size hint.
        let mut extra = 0;
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value::<IgnoredAny>()?;
            extra += 1;
        }
        if extra > 0 {
            return Err(one_key(1 + extra));
        }
        Ok(request)
    }
}

impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        deserialize_shape(deserializer)
    }
}

/// A field every request of its kind must carry. Checked after decoding so that the
/// path names the missing field itself, not only the object that lacks it.
fn required<T>(value: Option<T>, parent: &str, key: &str) -> Result<T> {
    value.ok_or_else(|| {
        RequestError::malformed(
            format!("{parent}.{key}"),
            format!("missing: add `\"{key}\"`"),
        )
    })
}

/// `{"binary": {"forecasts": [p...], "outcomes": [0|1...]}}`: Brier, log score, Murphy
/// decompositions, ECE and the reliability table.
#[derive(Debug, Deserialize)]
pub struct BinaryRequest {
    #[serde(default, deserialize_with = "present")]
    forecasts: Option<List<Probability>>,
    #[serde(default, deserialize_with = "present")]
    outcomes: Option<List<Outcome>>,
}

impl BinaryRequest {
    const PATH: &str = "$.binary";

    fn answer(self) -> Result<BinaryResponse> {
        let forecasts: Vec<f64> = required(self.forecasts, Self::PATH, "forecasts")?
            .0
            .into_iter()
            .map(|p| p.0)
            .collect();
        let outcomes: Vec<bool> = required(self.outcomes, Self::PATH, "outcomes")?
            .0
            .into_iter()
            .map(|o| o.0)
            .collect();
        if forecasts.is_empty() {
            return Err(RequestError::malformed(
                "$.binary.forecasts",
                "is empty: give at least one forecast",
            ));
        }
        if forecasts.len() != outcomes.len() {
            return Err(RequestError::malformed(
                "$.binary.outcomes",
                format!(
                    "has {} values but forecasts has {}: give one outcome per forecast",
                    outcomes.len(),
                    forecasts.len()
                ),
            ));
        }
        let report =
            binary_report(&forecasts, &outcomes).map_err(RequestError::rejected(Self::PATH))?;
        Ok(report.into())
    }
}

/// `{"calibration_counts": {"counts": [4 counts], "n": N}}`: Cooke's calibration score of
/// realisations counted per 5/50/95 inter-quantile bin, with `N` seed questions.
#[derive(Debug, Deserialize)]
pub struct CalibrationCountsRequest {
    #[serde(default, deserialize_with = "present")]
    counts: Option<List<Count>>,
    #[serde(default, deserialize_with = "present")]
    n: Option<Finite>,
}

impl CalibrationCountsRequest {
    const PATH: &str = "$.calibration_counts";

    fn answer(self) -> Result<CalibrationCountsResponse> {
        let counts: Vec<usize> = required(self.counts, Self::PATH, "counts")?
            .0
            .into_iter()
            .map(|c| c.0)
            .collect();
        let bins = LEVELS_5_50_95.len() + 1;
        if counts.len() != bins {
            return Err(RequestError::malformed(
                "$.calibration_counts.counts",
                format!(
                    "has {} values: give {bins} counts, one per 5/50/95 inter-quantile bin",
                    counts.len()
                ),
            ));
        }
        if counts.iter().sum::<usize>() == 0 {
            return Err(RequestError::malformed(
                "$.calibration_counts.counts",
                "all counts are zero: at least one realisation is needed",
            ));
        }
        let n = required(self.n, Self::PATH, "n")?.0;
        if n <= 0.0 {
            return Err(RequestError::malformed(
                "$.calibration_counts.n",
                "must be > 0 (the number of seed questions)",
            ));
        }
        let calibration = calibration_score(&counts, &LEVELS_5_50_95, n, 1.0)
            .map_err(RequestError::rejected(Self::PATH))?;
        Ok(CalibrationCountsResponse { calibration })
    }
}

/// `{"cooke": {"quantiles", "items", "experts", "overshoot"?, "alpha"?}}`: Cooke's classical
/// model with cohort ranges; `alpha` null or absent means optimise it.
#[derive(Debug, Deserialize)]
pub struct CookeRequest {
    #[serde(default, deserialize_with = "present")]
    quantiles: Option<List<Finite>>,
    #[serde(default, deserialize_with = "present")]
    items: Option<List<Object<CookeItem>>>,
    #[serde(default, deserialize_with = "present")]
    experts: Option<List<Object<CookeExpert>>>,
    #[serde(default)]
    overshoot: Option<Finite>,
    #[serde(default)]
    alpha: Option<Finite>,
}

/// `{"id", "realization" (null or absent = a target), "scale" ("uni" by default)}`.
#[derive(Debug, Deserialize)]
pub struct CookeItem {
    #[serde(default, deserialize_with = "present")]
    id: Option<Id>,
    #[serde(default)]
    realization: Option<Finite>,
    #[serde(default, deserialize_with = "present")]
    scale: Option<ScaleName>,
}

/// `{"id", "values": {item id: [q...]}}`; an item left out is unanswered.
#[derive(Debug, Deserialize)]
pub struct CookeExpert {
    #[serde(default, deserialize_with = "present")]
    id: Option<Id>,
    #[serde(default, deserialize_with = "present")]
    values: Option<Entries<List<Finite>>>,
}

impl CookeRequest {
    const PATH: &str = "$.cooke";

    fn answer(self) -> Result<CookeResponse> {
        let levels: Vec<f64> = required(self.quantiles, Self::PATH, "quantiles")?
            .0
            .into_iter()
            .map(|q| q.0)
            .collect();
        validate_levels(&levels).map_err(RequestError::rejected("$.cooke.quantiles"))?;
        let wire_items = required(self.items, Self::PATH, "items")?.0;
        let mut items = Vec::with_capacity(wire_items.len());
        let mut index_of: HashMap<String, usize> = HashMap::new();
        for (j, Object(item)) in wire_items.into_iter().enumerate() {
            let path = format!("$.cooke.items[{j}]");
            let Id(id) = required(item.id, &path, "id")?;
            if index_of.insert(id.clone(), j).is_some() {
                return Err(RequestError::malformed(
                    format!("{path}.id"),
                    format!("`{id}` appears twice: give every item a distinct id"),
                ));
            }
            items.push(Item {
                id,
                realization: item.realization.map(|r| r.0),
                scale: item.scale.map_or(Scale::Uni, |s| s.0),
                frozen_range: None,
            });
        }
        if items.is_empty() {
            return Err(RequestError::malformed(
                "$.cooke.items",
                "is empty: give at least one item",
            ));
        }
        let wire_experts = required(self.experts, Self::PATH, "experts")?.0;
        let mut experts = Vec::with_capacity(wire_experts.len());
        for (e, Object(expert)) in wire_experts.into_iter().enumerate() {
            let path = format!("$.cooke.experts[{e}]");
            let Id(id) = required(expert.id, &path, "id")?;
            let values = required(expert.values, &path, "values")?.0;
            let mut row: Vec<Option<Vec<f64>>> = vec![None; items.len()];
            for (item_id, List(q)) in values {
                let qpath = format!("{path}.values.{item_id}");
                let Some(&j) = index_of.get(&item_id) else {
                    return Err(RequestError::malformed(
                        qpath,
                        format!("`{item_id}` is not one of the items: check the id"),
                    ));
                };
                row[j] = Some(expert_quantiles(q, &levels, &qpath)?);
            }
            experts.push(Assessment { id, values: row });
        }
        if experts.is_empty() {
            return Err(RequestError::malformed(
                "$.cooke.experts",
                "is empty: give at least one expert",
            ));
        }
        let overshoot = self.overshoot.map_or(DEFAULT_OVERSHOOT, |k| k.0);
        let alpha = self.alpha.map_or(Alpha::Optimised, |a| Alpha::Fixed(a.0));
        let model = CookeModel::new(&levels, items, experts, overshoot, 1.0)
            .map_err(RequestError::rejected(Self::PATH))?;
        let result = model
            .solve(alpha)
            .map_err(RequestError::rejected(Self::PATH))?;
        Ok(CookeResponse::new(&result, alpha))
    }
}

/// One expert's quantiles for one item: one value per level, strictly increasing.
fn expert_quantiles(q: Vec<Finite>, levels: &[f64], path: &str) -> Result<Vec<f64>> {
    let q: Vec<f64> = q.into_iter().map(|x| x.0).collect();
    if q.len() != levels.len() {
        return Err(RequestError::malformed(
            path,
            format!(
                "has {} values: give one per quantile level ({})",
                q.len(),
                levels.len()
            ),
        ));
    }
    if !q.windows(2).all(|w| w[0] < w[1]) {
        return Err(RequestError::malformed(
            path,
            format!("{q:?} is not strictly increasing: order the quantiles q5 < q50 < q95"),
        ));
    }
    Ok(q)
}

/// `{"bridging": {"ratings": [[value|null per item] per rater], "loss"?, "seed"?}}`: the
/// bridging (matrix factorisation) fit.
#[derive(Debug, Deserialize)]
pub struct BridgingRequest {
    #[serde(default, deserialize_with = "present")]
    ratings: Option<List<List<Option<Finite>>>>,
    #[serde(default, deserialize_with = "present")]
    loss: Option<LossName>,
    #[serde(default, deserialize_with = "present")]
    seed: Option<Seed>,
}

impl BridgingRequest {
    const PATH: &str = "$.bridging";

    fn answer(self) -> Result<BridgingResponse> {
        let rows = required(self.ratings, Self::PATH, "ratings")?.0;
        let Some(width) = rows.first().map(|row| row.0.len()) else {
            return Err(RequestError::malformed(
                "$.bridging.ratings",
                "is empty: give one row of ratings per rater",
            ));
        };
        let mut ratings = Vec::with_capacity(rows.len());
        for (u, List(row)) in rows.into_iter().enumerate() {
            if row.len() != width {
                return Err(RequestError::malformed(
                    format!("$.bridging.ratings[{u}]"),
                    format!(
                        "has {} items but row 0 has {width}: use null for an unrated item",
                        row.len()
                    ),
                ));
            }
            ratings.push(row.into_iter().map(|c| c.map(|x| x.0)).collect::<Vec<_>>());
        }
        if ratings.iter().flatten().all(Option::is_none) {
            return Err(RequestError::malformed(
                "$.bridging.ratings",
                "holds no rating (all null): give at least one value",
            ));
        }
        let defaults = BridgingConfig::default();
        let config = BridgingConfig {
            loss: self.loss.map_or(defaults.loss, |l| l.0),
            seed: self.seed.map_or(defaults.seed, |s| s.0),
            ..defaults
        };
        let fit = fit_matrix(&ratings, &config).map_err(RequestError::rejected(Self::PATH))?;
        Ok(BridgingResponse::new(fit, config.loss))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridging::LossForm;
    use crate::response::ErrorResponse;

    fn answer(line: &str) -> Result<Response> {
        answer_line(line.as_bytes()).expect("not a blank line")
    }

    /// The refusal of `line`, checked to name `path`; returns the problem text.
    fn refusal(line: &str, path: &str) -> String {
        let e = answer(line).expect_err("the line is malformed");
        assert_eq!(e.path(), path, "{e}");
        let text = e.to_string();
        assert!(text.starts_with(&format!("{path}: ")), "{text}");
        text[path.len() + 2..].to_string()
    }

    fn json(response: &Response) -> String {
        serde_json::to_string(response).unwrap()
    }

    #[test]
    fn binary_answers_in_the_documented_shape() {
        let r = answer(r#"{"binary": {"forecasts": [0.0, 0.5], "outcomes": [1, 0]}}"#).unwrap();
        let Response::Binary(b) = &r else {
            panic!("{r:?}")
        };
        assert!((b.brier - 0.625).abs() < 1e-15);
        assert_eq!(b.log_loss, None, "probability 0 on a realised outcome");
        assert_eq!(b.reliability_table.len(), 10);
        let text = json(&r);
        assert!(
            text.starts_with(r#"{"brier":0.625,"log_loss":null,"murphy":{"#),
            "{text}"
        );
        assert!(text.contains(r#""ece":"#));
        assert!(text.contains(
            r#""reliability_table":[{"bin":0,"count":1,"mean_forecast":0.0,"observed_frequency":1.0},"#
        ));
        assert!(
            text.contains(r#"{"bin":1,"count":0,"mean_forecast":null,"observed_frequency":null}"#)
        );
    }

    #[test]
    fn binary_accepts_integer_and_float_outcomes() {
        let r = answer(r#"{"binary": {"forecasts": [1, 0.25], "outcomes": [1.0, 0]}}"#).unwrap();
        let Response::Binary(b) = r else {
            panic!("{r:?}")
        };
        assert!((b.brier - 0.03125).abs() < 1e-15);
    }

    #[test]
    fn calibration_counts_answers() {
        let r = answer(r#"{"calibration_counts": {"counts": [0, 5, 5, 0], "n": 10}}"#).unwrap();
        let Response::CalibrationCounts(c) = &r else {
            panic!("{r:?}")
        };
        assert!((c.calibration - 0.5505).abs() < 1e-4);
        assert!(json(&r).starts_with(r#"{"calibration":0.55"#));
        let r = answer(r#"{"calibration_counts": {"counts": [1, 9, 9, 1], "n": 20}}"#).unwrap();
        let Response::CalibrationCounts(c) = r else {
            panic!("{r:?}")
        };
        assert!((c.calibration - 1.0).abs() < 1e-12);
    }

    const COOKE: &str = r#"{"cooke": {"quantiles": [0.05, 0.5, 0.95], "items": [{"id": "s1", "realization": 5}, {"id": "s2", "realization": 20, "scale": "log"}, {"id": "t", "realization": null}], "experts": [{"id": "a", "values": {"s1": [1, 4, 9], "s2": [10, 18, 30], "t": [1, 2, 3]}}, {"id": "b", "values": {"s1": [6, 7, 8], "s2": [1, 2, 3]}}]ALPHA}}"#;

    #[test]
    fn cooke_answers_with_weights_by_expert() {
        let r = answer(&COOKE.replace("ALPHA", "")).unwrap();
        let Response::Cooke(c) = &r else {
            panic!("{r:?}")
        };
        let ids: Vec<&str> = c.experts.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        let sum: f64 = c.weights.iter().map(|(_, w)| w).sum();
        assert!((sum - 1.0).abs() < 1e-12);
        assert_eq!(c.optimised_alpha, Some(c.alpha), "alpha absent: optimised");
        let text = json(&r);
        assert!(
            text.starts_with(r#"{"experts":[{"id":"a","calibration":"#),
            "{text}"
        );
        assert!(text.contains(r#""weights":{"a":"#), "{text}");
        assert!(text.contains(r#""dm":{"calibration":"#), "{text}");
        assert!(text.contains(r#","optimised_alpha":"#), "{text}");

        let r = answer(&COOKE.replace("ALPHA", r#", "alpha": 0, "overshoot": 0.2"#)).unwrap();
        let Response::Cooke(c) = r else {
            panic!("{r:?}")
        };
        assert_eq!((c.optimised_alpha, c.alpha), (None, 0.0), "alpha given");
    }

    #[test]
    fn bridging_answers_with_the_loss_form() {
        let r = answer(
            r#"{"bridging": {"ratings": [[1, 0, 1], [1, 0, null], [0, 1, 1], [0, 1, 1]], "loss": "production_mean", "seed": 7}}"#,
        )
        .unwrap();
        let Response::Bridging(b) = &r else {
            panic!("{r:?}")
        };
        assert_eq!(b.rater_factors.len(), 4);
        assert_eq!(b.item_factors.len(), 3);
        let text = json(&r);
        assert!(text.starts_with(r#"{"loss":"#), "{text}");
        assert!(
            text.contains(r#""loss_form":"production_mean","sweeps":"#),
            "{text}"
        );
        let r = answer(r#"{"bridging": {"ratings": [[1, 0], [0, 1]]}}"#).unwrap();
        let Response::Bridging(b) = r else {
            panic!("{r:?}")
        };
        assert_eq!(b.loss_form, LossForm::PublishedSum, "the default loss");
    }

    #[test]
    fn line_framing() {
        assert!(answer_line(b"").is_none());
        assert!(answer_line(b"  \t\r").is_none(), "blank lines are skipped");
        let crlf = b"{\"calibration_counts\": {\"counts\": [1, 9, 9, 1], \"n\": 20}}\r";
        assert!(matches!(answer_line(crlf), Some(Ok(_))), "CRLF is accepted");
        assert_eq!(
            answer_line(b"{\"binary\": \xff}"),
            Some(Err(RequestError::NotUtf8))
        );
        let e = answer("this is not json").unwrap_err();
        assert!(matches!(e, RequestError::NotJson(_)), "{e:?}");
        assert!(e.to_string().starts_with("$: not valid JSON ("), "{e}");
        let deep = "[".repeat(10_000);
        assert!(matches!(answer(&deep), Err(RequestError::NotJson(_))));
    }

    #[test]
    fn the_envelope_names_the_kinds() {
        let p = refusal("[1]", "$");
        assert_eq!(
            p,
            r#"must be an object such as {"binary": {...}}, found an array"#
        );
        let p = refusal(r#"{"nope": {}}"#, "$");
        assert_eq!(
            p,
            "unknown request `nope`: use one of binary, calibration_counts, cooke, bridging"
        );
        let p = refusal(r#"{"binary": {}, "cooke": {}}"#, "$");
        assert!(
            p.starts_with("must have exactly one key (the request kind), found 2"),
            "{p}"
        );
        let p = refusal("{}", "$");
        assert!(p.contains("found 0"), "{p}");
        let p = refusal(r#"{"binary": [0.5]}"#, "$.binary");
        assert_eq!(p, "must be an object, found an array");
    }

    #[test]
    fn wrong_types_name_the_element() {
        let p = refusal(
            r#"{"binary": {"forecasts": [0.2, "x"], "outcomes": [1, 0]}}"#,
            "$.binary.forecasts[1]",
        );
        assert_eq!(p, "must be a finite number, found a string");
        let p = refusal(
            r#"{"binary": {"forecasts": 0.2, "outcomes": [1]}}"#,
            "$.binary.forecasts",
        );
        assert_eq!(p, "must be an array, found a number");
        let p = refusal(
            r#"{"binary": {"forecasts": [0.2], "outcomes": ["1"]}}"#,
            "$.binary.outcomes[0]",
        );
        assert_eq!(p, r#""1" is not an outcome: use 0 or 1"#);
        let p = refusal(
            r#"{"calibration_counts": {"counts": [1, 2.5, 1, 1], "n": 5}}"#,
            "$.calibration_counts.counts[1]",
        );
        assert_eq!(p, "2.5 is not a count: use a whole number >= 0");
        let p = refusal(
            r#"{"cooke": {"quantiles": [0.5], "items": [{"id": 3}], "experts": []}}"#,
            "$.cooke.items[0].id",
        );
        assert_eq!(p, "must be a string");
        let p = refusal(
            r#"{"cooke": {"quantiles": [0.5], "items": [{"id": "a", "scale": "linear"}], "experts": []}}"#,
            "$.cooke.items[0].scale",
        );
        assert_eq!(p, r#"must be "uni" or "log""#);
        let p = refusal(
            r#"{"cooke": {"quantiles": [0.5], "items": [{"id": "a"}], "experts": [{"id": "e", "values": []}]}}"#,
            "$.cooke.experts[0].values",
        );
        assert_eq!(p, "must be an object, found an array");
        let p = refusal(
            r#"{"cooke": {"quantiles": [0.5], "items": [{"id": "a"}], "experts": [{"id": "e", "values": {"a": [true]}}]}}"#,
            "$.cooke.experts[0].values.a[0]",
        );
        assert_eq!(p, "must be a finite number, found a boolean");
        let p = refusal(
            r#"{"bridging": {"ratings": [[1, "good"]]}}"#,
            "$.bridging.ratings[0][1]",
        );
        assert_eq!(p, "must be a finite number, found a string");
        let p = refusal(
            r#"{"bridging": {"ratings": [[1]], "loss": "sideways"}}"#,
            "$.bridging.loss",
        );
        assert_eq!(p, r#"must be "published_sum" or "production_mean""#);
        let p = refusal(
            r#"{"bridging": {"ratings": [[1]], "seed": -1}}"#,
            "$.bridging.seed",
        );
        assert_eq!(p, "must be a whole number >= 0");
    }

    #[test]
    fn missing_fields_name_the_field() {
        let p = refusal(r#"{"binary": {"forecasts": [0.5]}}"#, "$.binary.outcomes");
        assert_eq!(p, r#"missing: add `"outcomes"`"#);
        refusal(
            r#"{"calibration_counts": {"counts": [0, 1, 1, 0]}}"#,
            "$.calibration_counts.n",
        );
        refusal(
            r#"{"cooke": {"quantiles": [0.5], "items": [{"id": "a"}, {"realization": 1}], "experts": []}}"#,
            "$.cooke.items[1].id",
        );
        refusal(
            r#"{"cooke": {"quantiles": [0.5], "items": [{"id": "a"}], "experts": [{"id": "e"}]}}"#,
            "$.cooke.experts[0].values",
        );
        refusal(
            r#"{"bridging": {"loss": "published_sum"}}"#,
            "$.bridging.ratings",
        );
        let p = refusal(
            r#"{"binary": {"forecasts": null, "outcomes": [1]}}"#,
            "$.binary.forecasts",
        );
        assert_eq!(p, "must be an array, found null", "null is not absent");
    }

    #[test]
    fn out_of_range_values_are_refused_with_the_fix() {
        let e = answer(r#"{"binary": {"forecasts": [0.2, 1.3], "outcomes": [0, 1]}}"#).unwrap_err();
        assert_eq!(
            ErrorResponse::new(4, &e).error,
            "line 4: $.binary.forecasts[1]: 1.3 is not a probability: use a number in [0, 1]",
            "the example of docs/CALIBRATION.md"
        );
        let p = refusal(
            r#"{"binary": {"forecasts": [-0.5], "outcomes": [0]}}"#,
            "$.binary.forecasts[0]",
        );
        assert_eq!(p, "-0.5 is not a probability: use a number in [0, 1]");
        let p = refusal(
            r#"{"binary": {"forecasts": [0.2], "outcomes": [2]}}"#,
            "$.binary.outcomes[0]",
        );
        assert_eq!(p, "2 is not an outcome: use 0 or 1");
        let p = refusal(
            r#"{"calibration_counts": {"counts": [1, 1, 1, -1], "n": 5}}"#,
            "$.calibration_counts.counts[3]",
        );
        assert_eq!(p, "-1 is not a count: use a whole number >= 0");
        let p = refusal(
            r#"{"calibration_counts": {"counts": [1, 1, 1, 1], "n": 0}}"#,
            "$.calibration_counts.n",
        );
        assert_eq!(p, "must be > 0 (the number of seed questions)");
        let p = refusal(
            r#"{"cooke": {"quantiles": [0.5, 1.5], "items": [{"id": "a"}], "experts": []}}"#,
            "$.cooke.quantiles",
        );
        assert!(
            p.starts_with("quantile levels [0.5, 1.5] must be strictly increasing"),
            "{p}"
        );
    }

    #[test]
    fn checks_across_fields_name_the_field_at_fault() {
        let p = refusal(
            r#"{"binary": {"forecasts": [], "outcomes": []}}"#,
            "$.binary.forecasts",
        );
        assert_eq!(p, "is empty: give at least one forecast");
        let p = refusal(
            r#"{"binary": {"forecasts": [0.2, 0.3], "outcomes": [1]}}"#,
            "$.binary.outcomes",
        );
        assert_eq!(
            p,
            "has 1 values but forecasts has 2: give one outcome per forecast"
        );
        let p = refusal(
            r#"{"calibration_counts": {"counts": [1, 1, 1], "n": 3}}"#,
            "$.calibration_counts.counts",
        );
        assert_eq!(
            p,
            "has 3 values: give 4 counts, one per 5/50/95 inter-quantile bin"
        );
        refusal(
            r#"{"calibration_counts": {"counts": [0, 0, 0, 0], "n": 3}}"#,
            "$.calibration_counts.counts",
        );
        let cooke = |items: &str, values: &str| {
            format!(
                r#"{{"cooke": {{"quantiles": [0.05, 0.5, 0.95], "items": {items}, "experts": [{{"id": "e", "values": {values}}}]}}}}"#
            )
        };
        let one = r#"[{"id": "a", "realization": 1}]"#;
        let p = refusal(
            &cooke(one, r#"{"b": [1, 2, 3]}"#),
            "$.cooke.experts[0].values.b",
        );
        assert_eq!(p, "`b` is not one of the items: check the id");
        let p = refusal(
            &cooke(one, r#"{"a": [3, 2, 1]}"#),
            "$.cooke.experts[0].values.a",
        );
        assert!(p.contains("is not strictly increasing"), "{p}");
        let p = refusal(
            &cooke(one, r#"{"a": [1, 2]}"#),
            "$.cooke.experts[0].values.a",
        );
        assert_eq!(p, "has 2 values: give one per quantile level (3)");
        let p = refusal(
            &cooke(r#"[{"id": "a"}, {"id": "a"}]"#, "{}"),
            "$.cooke.items[1].id",
        );
        assert_eq!(p, "`a` appears twice: give every item a distinct id");
        refusal(&cooke("[]", "{}"), "$.cooke.items");
        refusal(
            r#"{"cooke": {"quantiles": [0.5], "items": [{"id": "a"}], "experts": []}}"#,
            "$.cooke.experts",
        );
        let p = refusal(
            r#"{"bridging": {"ratings": [[1, 0], [1]]}}"#,
            "$.bridging.ratings[1]",
        );
        assert_eq!(
            p,
            "has 1 items but row 0 has 2: use null for an unrated item"
        );
        refusal(r#"{"bridging": {"ratings": []}}"#, "$.bridging.ratings");
        refusal(
            r#"{"bridging": {"ratings": [[null], [null]]}}"#,
            "$.bridging.ratings",
        );
    }

    #[test]
    fn refusals_by_the_computation_name_the_request() {
        let e = answer(
            r#"{"cooke": {"quantiles": [0.05, 0.5, 0.95], "items": [{"id": "s", "realization": 5}, {"id": "t", "realization": null}], "experts": [{"id": "a", "values": {"s": [1, 4, 9]}}, {"id": "b", "values": {"t": [1, 2, 3]}}]}}"#,
        )
        .unwrap_err();
        assert!(matches!(e, RequestError::Rejected { .. }), "{e:?}");
        assert_eq!(e.path(), "$.cooke");
        assert!(e.to_string().contains("expert `b` answered no seed"), "{e}");
        let e = answer(&COOKE.replace("ALPHA", r#", "alpha": 2"#)).unwrap_err();
        assert_eq!(e.path(), "$.cooke");
        assert!(e.to_string().contains("lower alpha or pass null"), "{e}");
    }

    #[test]
    fn unknown_keys_are_ignored_as_before() {
        assert!(
            answer(r#"{"calibration_counts": {"counts": [0, 5, 5, 0], "n": 10, "note": 1}}"#)
                .is_ok()
        );
    }
}
