//! How the values inside a `panel calibrate --jsonl` request are read: JSON shapes (arrays,
//! objects) and leaves (probabilities, outcomes, counts, ids, ...).
//!
//! Every refusal says what is wrong and how to fix it, because the text reaches the person
//! who wrote the request as `{"error": "line N: <JSON path>: <problem and fix>"}`
//! (docs/CALIBRATION.md, section 8). Shapes are decoded element by element, so
//! `serde_path_to_error` can name the exact element at fault; leaves are read as a
//! [`Value`] first, so their message can quote what was sent.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::bridging::LossForm;
use crate::cooke::Scale;
use crate::exam::json_type;

/// For a field that may be absent but, when present, must not be `null`: absent stays
/// `None` (with `#[serde(default)]`), `null` reaches `T` and is refused there with
/// "must be ..., found null" instead of passing for "absent".
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// A JSON array or object decoded element by element. Any other JSON kind is refused
/// with "must be {WANT}, found <kind>" (serde's default "invalid type" text names Rust
/// types, not JSON ones, and a derived struct would even accept an array).
pub(crate) trait Shape<'de>: Sized {
    /// What the value must be, as in "must be an array".
    const WANT: &'static str;

    fn from_seq<A: SeqAccess<'de>>(_seq: A) -> Result<Self, A::Error> {
        Err(wrong_kind::<Self, _>("an array"))
    }

    fn from_map<A: MapAccess<'de>>(_map: A) -> Result<Self, A::Error> {
        Err(wrong_kind::<Self, _>("an object"))
    }
}

fn wrong_kind<'de, S: Shape<'de>, E: de::Error>(found: &str) -> E {
    E::custom(format_args!("must be {}, found {found}", S::WANT))
}

/// Decodes a [`Shape`]; its `Deserialize` impls are one line each.
pub(crate) fn deserialize_shape<'de, D: Deserializer<'de>, S: Shape<'de>>(
    deserializer: D,
) -> Result<S, D::Error> {
    deserializer.deserialize_any(ShapeVisitor(PhantomData))
}

struct ShapeVisitor<S>(PhantomData<S>);

impl<'de, S: Shape<'de>> Visitor<'de> for ShapeVisitor<S> {
    type Value = S;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(S::WANT)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<S, E> {
        Err(wrong_kind::<S, _>("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<S, E> {
        Err(wrong_kind::<S, _>("a number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<S, E> {
        Err(wrong_kind::<S, _>("a number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<S, E> {
        Err(wrong_kind::<S, _>("a number"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<S, E> {
        Err(wrong_kind::<S, _>("a string"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<S, E> {
        Err(wrong_kind::<S, _>("null"))
    }

    fn visit_none<E: de::Error>(self) -> Result<S, E> {
        Err(wrong_kind::<S, _>("null"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<S, A::Error> {
        S::from_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<S, A::Error> {
        S::from_map(map)
    }
}

/// A JSON array.
#[derive(Debug)]
pub(crate) struct List<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Shape<'de> for List<T> {
    const WANT: &'static str = "an array";

    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        // The hint comes from the input, so it only sizes the first allocation.
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(List(items))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_shape(deserializer)
    }
}

/// A JSON object read into the derived struct `T` (unknown keys are ignored, as they
/// always were).
#[derive(Debug)]
pub(crate) struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Shape<'de> for Object<T> {
    const WANT: &'static str = "an object";

    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Object)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_shape(deserializer)
    }
}

/// A JSON object with free-form keys, in the order they were written.
#[derive(Debug)]
pub(crate) struct Entries<V>(pub Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Shape<'de> for Entries<V> {
    const WANT: &'static str = "an object";

    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(1024));
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Entries(entries))
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_shape(deserializer)
    }
}

/// Why a leaf of a request was refused. The text is what the request's author reads after
/// the JSON path, so each says what was sent and what to send instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum FieldError {
    #[error("must be a finite number, found {found}")]
    NonFinite { found: &'static str },
    #[error("{0} is not a probability: use a number in [0, 1]")]
    OutsideUnit(f64),
    #[error("{0} is not an outcome: use 0 or 1")]
    BadOutcome(Value),
    #[error("{0} is not a count: use a whole number >= 0")]
    BadCount(Value),
    #[error("must be a string")]
    NonString,
    #[error("must be a whole number >= 0")]
    BadSeed,
    #[error("must be \"uni\" or \"log\"")]
    UnknownScale,
    #[error("must be \"published_sum\" or \"production_mean\"")]
    UnknownLoss,
}

/// Any JSON number (JSON has no NaN or infinity, so every number is finite).
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(try_from = "Value")]
pub(crate) struct Finite(pub f64);

impl TryFrom<Value> for Finite {
    type Error = FieldError;

    fn try_from(v: Value) -> Result<Self, FieldError> {
        match v.as_f64() {
            Some(x) if x.is_finite() => Ok(Finite(x)),
            _ => Err(FieldError::NonFinite {
                found: json_type(&v),
            }),
        }
    }
}

/// A forecast: a number in [0, 1].
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(try_from = "Value")]
pub(crate) struct Probability(pub f64);

impl TryFrom<Value> for Probability {
    type Error = FieldError;

    fn try_from(v: Value) -> Result<Self, FieldError> {
        let Finite(p) = Finite::try_from(v)?;
        if (0.0..=1.0).contains(&p) {
            Ok(Probability(p))
        } else {
            Err(FieldError::OutsideUnit(p))
        }
    }
}

/// A binary outcome: the number 0 or 1.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(try_from = "Value")]
pub(crate) struct Outcome(pub bool);

impl TryFrom<Value> for Outcome {
    type Error = FieldError;

    fn try_from(v: Value) -> Result<Self, FieldError> {
        match v.as_f64() {
            Some(0.0) => Ok(Outcome(false)),
            Some(1.0) => Ok(Outcome(true)),
            _ => Err(FieldError::BadOutcome(v)),
        }
    }
}

/// A count of realisations in one inter-quantile bin: a whole number >= 0.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(try_from = "Value")]
pub(crate) struct Count(pub usize);

impl TryFrom<Value> for Count {
    type Error = FieldError;

    fn try_from(v: Value) -> Result<Self, FieldError> {
        match v.as_u64().and_then(|c| usize::try_from(c).ok()) {
            Some(c) => Ok(Count(c)),
            None => Err(FieldError::BadCount(v)),
        }
    }
}

/// An item or expert id.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(try_from = "Value")]
pub(crate) struct Id(pub String);

impl TryFrom<Value> for Id {
    type Error = FieldError;

    fn try_from(v: Value) -> Result<Self, FieldError> {
        match v {
            Value::String(s) => Ok(Id(s)),
            _ => Err(FieldError::NonString),
        }
    }
}

/// The seed of the bridging fit's factor initialisation.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(try_from = "Value")]
pub(crate) struct Seed(pub u64);

impl TryFrom<Value> for Seed {
    type Error = FieldError;

    fn try_from(v: Value) -> Result<Self, FieldError> {
        v.as_u64().map(Seed).ok_or(FieldError::BadSeed)
    }
}

/// The background scale of a Cooke item, `"uni"` or `"log"`.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(try_from = "Value")]
pub(crate) struct ScaleName(pub Scale);

impl TryFrom<Value> for ScaleName {
    type Error = FieldError;

    fn try_from(v: Value) -> Result<Self, FieldError> {
        match v.as_str() {
            Some("uni") => Ok(ScaleName(Scale::Uni)),
            Some("log") => Ok(ScaleName(Scale::Log)),
            _ => Err(FieldError::UnknownScale),
        }
    }
}

/// The loss the bridging fit minimises, `"published_sum"` or `"production_mean"`.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(try_from = "Value")]
pub(crate) struct LossName(pub LossForm);

impl TryFrom<Value> for LossName {
    type Error = FieldError;

    fn try_from(v: Value) -> Result<Self, FieldError> {
        match v.as_str() {
            Some("published_sum") => Ok(LossName(LossForm::PublishedSum)),
            Some("production_mean") => Ok(LossName(LossForm::ProductionMean)),
            _ => Err(FieldError::UnknownLoss),
        }
    }
}
