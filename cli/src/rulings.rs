//! Reading the signed rulings a motion keeps on the record. The coordinator stores each
//! ruling as hex of the protobuf `SignedRuling` (docs/WIRE.md); `panel up` and
//! `panel motion show` decode them here and name the arbiter by its registered key.

use std::collections::BTreeMap;

use panel_machine::Arbiter;
use panel_machine::WireRuling;
use panel_machine::{Seat, Stance};
use serde::Serialize;
use thiserror::Error;

/// Registered arbiters by hex public key: (arbiter id, declared stance).
pub type Names = BTreeMap<String, (String, String)>;

/// A stance as the CLI prints it: `A`, `B`, or `undeclared` for a seat with no stance (the
/// record's `None`, never shown as Rust's word).
pub fn stance_name(s: Stance) -> &'static str {
    match s {
        Stance::A => "A",
        Stance::B => "B",
        Stance::None => "undeclared",
    }
}

/// The roster from a `Query::Arbiters` answer's arbiters.
pub fn names_from_arbiters(arbiters: &[Arbiter]) -> Names {
    arbiters
        .iter()
        .map(|a| {
            let r = &a.registration;
            (
                r.public_key.to_hex(),
                (r.arbiter_id.clone(), stance_name(r.stance).to_string()),
            )
        })
        .collect()
}

/// Why a stored ruling could not be read.
#[derive(Debug, Error)]
pub enum DecodeError {
    #[error("the ruling is not a protobuf SignedRuling: {0}")]
    Malformed(#[from] panel_machine::rules::ruling::RulingError),
    #[error("the signed ruling carries no ruling")]
    NoRuling,
}

/// One decoded ruling, as a reader wants it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RulingView {
    /// The registered arbiter id, or `?` for a key nobody registered.
    pub arbiter: String,
    pub stance: String,
    pub arbiter_key: String,
    pub decision: &'static str,
    /// Credence in the affirmative outcome (WIRE: `Ruling.probability`).
    pub probability: f64,
    /// Relevance as a weight (step x 0.25, SPEC section 9), when the motion asks for one.
    pub relevance: Option<f64>,
    /// Tier found on verification, 1..5.
    pub tier: Option<u32>,
    /// Retrieval receipt: the address fetched and the hex SHA-256 of its bytes.
    pub receipt: Option<(String, String)>,
    pub rationale: String,
    /// What produced the ruling, as the arbiter signed it (docs/WIRE.md "Judge
    /// provenance"); absent on rulings signed before it existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeView>,
}

/// A ruling's signed provenance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeView {
    pub kind: String,
    pub model: String,
    pub model_version: String,
    pub latency_ms: Option<u64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub requests: u32,
}

impl JudgeView {
    /// One line: kind, model (version), latency, tokens, requests.
    pub fn line(&self) -> String {
        let mut out = self.kind.clone();
        if !self.model.is_empty() {
            out.push_str(&format!(" {}", self.model));
        }
        if !self.model_version.is_empty() && self.model_version != self.model {
            out.push_str(&format!(" ({})", self.model_version));
        }
        if let Some(ms) = self.latency_ms {
            out.push_str(&format!(", {ms} ms"));
        }
        match (self.prompt_tokens, self.completion_tokens) {
            (None, None) => {}
            (p, c) => out.push_str(&format!(
                ", tokens {} in / {} out",
                p.map_or("?".into(), |v| v.to_string()),
                c.map_or("?".into(), |v| v.to_string())
            )),
        }
        if self.requests > 0 {
            out.push_str(&format!(
                ", {} request{}",
                self.requests,
                if self.requests == 1 { "" } else { "s" }
            ));
        }
        out
    }
}

impl RulingView {
    /// The short answer: the relevance, or the decision with the receipt's hash prefix.
    pub fn value(&self) -> String {
        match (self.relevance, &self.receipt) {
            (Some(rel), _) => format!("relevance {rel}"),
            (_, Some((_, sha))) => format!(
                "{} (receipt {})",
                self.decision,
                sha.get(..12).unwrap_or(sha.as_str())
            ),
            _ => self.decision.to_string(),
        }
    }
}

/// Decodes one stored `SignedRuling` of a motion with `seats`; says what is wrong when it
/// cannot. The stance is the one its seat counted under (a debate's declaration, not the
/// registered label: docs/coordinator/acceptance.md "Declared priors"), the registered
/// one only for a key no seat holds.
pub fn decode(
    ruling: &WireRuling,
    names: &Names,
    seats: &[Seat],
) -> Result<RulingView, DecodeError> {
    let mut v = decode_unseated(ruling, names)?;
    if let Some(seat) = seats.iter().find(|s| s.arbiter_id == v.arbiter) {
        v.stance = stance_name(seat.stance).to_string();
    }
    Ok(v)
}

/// [`decode`] with the registered stance.
fn decode_unseated(ruling: &WireRuling, names: &Names) -> Result<RulingView, DecodeError> {
    let sr = ruling.decode()?;
    let r = sr.ruling.ok_or(DecodeError::NoRuling)?;
    let key = hex::encode(&r.arbiter_key);
    let (arbiter, stance) = names.get(&key).cloned().unwrap_or(("?".into(), "?".into()));
    let decision = panel_proto::ruling_check::decision_name(
        panel_proto::pb::Decision::try_from(r.decision)
            .unwrap_or(panel_proto::pb::Decision::Unspecified),
    );
    Ok(RulingView {
        arbiter,
        stance,
        arbiter_key: key,
        decision,
        probability: r.probability,
        relevance: r.relevance.map(|s| f64::from(s) * 0.25),
        tier: r.tier,
        receipt: r
            .receipt
            .as_ref()
            .map(|rc| (rc.url.clone(), hex::encode(&rc.sha256))),
        rationale: r.rationale,
        judge: r.provenance.map(|p| JudgeView {
            kind: p.judge_kind,
            model: p.model,
            model_version: p.model_version,
            latency_ms: p.latency_ms,
            prompt_tokens: p.prompt_tokens,
            completion_tokens: p.completion_tokens,
            requests: p.requests,
        }),
    })
}

/// (stance, arbiter id, short answer) for a one-line summary of a ruling.
pub fn ruling_line(
    ruling: &WireRuling,
    names: &Names,
    seats: &[Seat],
) -> Option<(String, String, String)> {
    let v = decode(ruling, names, seats).ok()?;
    let value = v.value();
    Some((v.stance, v.arbiter, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    use prost::Message;

    fn signed(decision: panel_proto::pb::Decision, relevance: Option<u32>) -> WireRuling {
        let sr = panel_proto::pb::SignedRuling {
            ruling: Some(panel_proto::pb::Ruling {
                motion_id: "m".into(),
                decision: decision as i32,
                probability: 0.8,
                relevance,
                rationale: "because".into(),
                arbiter_key: vec![7; 32],
                ..Default::default()
            }),
            signature: vec![0; 64],
            envelope_version: 1,
        };
        WireRuling::from_hex(hex::encode(sr.encode_to_vec()))
    }

    #[test]
    fn names_the_arbiter_by_key_and_reads_the_answer() {
        let names: Names = [(hex::encode([7u8; 32]), ("arb".into(), "B".into()))].into();
        let v = decode(
            &signed(panel_proto::pb::Decision::Accept, None),
            &names,
            &[],
        )
        .unwrap();
        assert_eq!((v.arbiter.as_str(), v.stance.as_str()), ("arb", "B"));
        assert_eq!(v.decision, "ACCEPT");
        assert_eq!(v.rationale, "because");
        assert_eq!(v.judge, None, "no provenance on an old ruling");
        let line = ruling_line(
            &signed(panel_proto::pb::Decision::None, Some(2)),
            &names,
            &[],
        );
        assert_eq!(
            line,
            Some(("B".into(), "arb".into(), "relevance 0.5".into()))
        );
    }

    /// An arbiter registered under B that declared A for a debate sat, and counted, under
    /// A: `panel motion show` groups its ruling there, not under the registered label.
    #[test]
    fn a_ruling_reads_under_the_stance_its_seat_counted() {
        let names: Names = [(hex::encode([7u8; 32]), ("arb".into(), "B".into()))].into();
        let seat = Seat {
            arbiter_id: "arb".into(),
            stance: Stance::A,
            organisation: "northwind".into(),
            lineage: "fam".into(),
        };
        let v = decode(
            &signed(panel_proto::pb::Decision::Accept, None),
            &names,
            &[seat],
        )
        .unwrap();
        assert_eq!(v.stance, "A");
    }

    #[test]
    fn the_signed_provenance_reads_as_one_line() {
        let j = JudgeView {
            kind: "llm".into(),
            model: "fixture-model-a".into(),
            model_version: "fixture-model-a-q4 system_fingerprint=fp_1".into(),
            latency_ms: Some(1840),
            prompt_tokens: Some(912),
            completion_tokens: None,
            requests: 2,
        };
        assert_eq!(
            j.line(),
            "llm fixture-model-a (fixture-model-a-q4 system_fingerprint=fp_1), 1840 ms, tokens 912 in / ? out, 2 requests"
        );
        let scripted = JudgeView {
            kind: "scripted".into(),
            model: "profile:honest".into(),
            model_version: String::new(),
            latency_ms: Some(0),
            prompt_tokens: None,
            completion_tokens: None,
            requests: 0,
        };
        assert_eq!(scripted.line(), "scripted profile:honest, 0 ms");
    }

    #[test]
    fn unknown_keys_and_garbage_are_reported_not_guessed() {
        let v = decode(
            &signed(panel_proto::pb::Decision::Reject, None),
            &Names::new(),
            &[],
        )
        .unwrap();
        assert_eq!(v.arbiter, "?");
        assert!(
            decode(&WireRuling::from_hex("zz"), &Names::new(), &[])
                .unwrap_err()
                .to_string()
                .contains("not hex")
        );
        assert!(
            decode(&WireRuling::from_hex("ffffffff"), &Names::new(), &[])
                .unwrap_err()
                .to_string()
                .contains("SignedRuling")
        );
    }
}
