//! Contributions (docs/ARCHITECTURE.md "Contribution"): the writes a contributor makes. Each
//! names its Gate fields, so the Gate runs before the write is proposed (SPEC section
//! 8), and applies through the spec-mode writers.

use serde::{Deserialize, Serialize};

use crate::appeal::AppealInput;
use crate::challenge::ChallengeInput;
use crate::document::{Citation, Debate, Definition, Side};
use crate::env::Env;
use crate::error::Outcome;
use crate::gate::{GateContext, GateField, Kind};
use crate::model::VersionInput;
use crate::protocol::Protocol;
use crate::scoring::tier_weight;

/// A claim as a contributor submits it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClaimInput {
    #[serde(rename = "type")]
    pub kind: String,
    pub assertion: String,
    pub grounds: String,
    pub warrant: String,
    #[serde(default)]
    pub evidence: Vec<Citation>,
    pub qualifier: String,
}

/// One contributor write. `author` and `side` travel beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Contribution {
    Definition {
        term: String,
        definition: String,
    },
    #[serde(rename_all = "camelCase")]
    Thread {
        title: String,
        claim: ClaimInput,
    },
    #[serde(rename_all = "camelCase")]
    Version {
        thread_id: String,
        claim: ClaimInput,
    },
    #[serde(rename_all = "camelCase")]
    Challenge {
        thread_id: String,
        version_id: String,
        ground: String,
        text: String,
        #[serde(default)]
        evidence: Vec<Citation>,
    },
    #[serde(rename_all = "camelCase")]
    Respond {
        challenge_id: String,
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    Steelman {
        of_side: Side,
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    Certify {
        of_side: Side,
    },
    #[serde(rename_all = "camelCase")]
    ReturnSteelman {
        of_side: Side,
        note: String,
    },
    #[serde(rename_all = "camelCase")]
    Appeal {
        ground: String,
        justification: String,
        #[serde(default)]
        evidence: Vec<Citation>,
        target_thread_ids: Vec<String>,
    },
}

fn claim_fields(c: &ClaimInput) -> Vec<GateField> {
    let mut f = vec![
        GateField::new("assertion", "Assertion", &c.assertion),
        GateField::new("grounds", "Grounds", &c.grounds),
        GateField::new("warrant", "Warrant", &c.warrant),
    ];
    for x in &mut f {
        x.required = true;
        x.argumentative = true;
    }
    f
}

fn max_tier(evidence: &[Citation]) -> f64 {
    evidence
        .iter()
        .map(|c| tier_weight(c.tier.as_deref()))
        .fold(0.0, f64::max)
}

impl Contribution {
    /// The op name, for logs and events.
    pub fn op(&self) -> &'static str {
        match self {
            Contribution::Definition { .. } => "definition",
            Contribution::Thread { .. } => "thread",
            Contribution::Version { .. } => "version",
            Contribution::Challenge { .. } => "challenge",
            Contribution::Respond { .. } => "respond",
            Contribution::Steelman { .. } => "steelman",
            Contribution::Certify { .. } => "certify",
            Contribution::ReturnSteelman { .. } => "return-steelman",
            Contribution::Appeal { .. } => "appeal",
        }
    }

    /// The fields and context the Gate checks (SPEC section 8).
    pub fn gate_input(&self, author: &str, side: &str) -> (Vec<GateField>, GateContext) {
        let mut ctx = GateContext {
            author: Some(author.to_string()),
            side: Some(side.to_string()),
            ..GateContext::default()
        };
        let fields = match self {
            Contribution::Definition { term, definition } => {
                ctx.kind = Kind::Definition;
                vec![
                    GateField::new("term", "Term", term),
                    GateField::new("definition", "Definition", definition),
                ]
            }
            Contribution::Thread { title, claim } => {
                ctx.kind = Kind::Claim;
                ctx.type_ = Some(claim.kind.clone());
                ctx.qualifier = Some(claim.qualifier.clone());
                ctx.evidence_count = Some(claim.evidence.len() as f64);
                ctx.max_tier_weight = Some(max_tier(&claim.evidence));
                let mut f = vec![GateField::new("title", "Title", title)];
                f.extend(claim_fields(claim));
                f
            }
            Contribution::Version { claim, .. } => {
                ctx.kind = Kind::Claim;
                ctx.type_ = Some(claim.kind.clone());
                ctx.qualifier = Some(claim.qualifier.clone());
                ctx.evidence_count = Some(claim.evidence.len() as f64);
                ctx.max_tier_weight = Some(max_tier(&claim.evidence));
                claim_fields(claim)
            }
            Contribution::Challenge {
                ground,
                text,
                evidence,
                ..
            } => {
                ctx.kind = Kind::Challenge;
                ctx.ground = Some(ground.clone());
                ctx.evidence_count = Some(evidence.len() as f64);
                let mut f = GateField::new("text", "Challenge", text);
                f.argumentative = true;
                vec![f]
            }
            Contribution::Respond { text, .. } => {
                ctx.kind = Kind::Response;
                let mut f = GateField::new("text", "Response", text);
                f.argumentative = true;
                vec![f]
            }
            Contribution::Steelman { text, .. } => {
                ctx.kind = Kind::Steelman;
                vec![GateField::new("text", "Steelman", text)]
            }
            Contribution::Certify { .. } => {
                ctx.kind = Kind::Steelman;
                Vec::new()
            }
            Contribution::ReturnSteelman { note, .. } => {
                ctx.kind = Kind::Response;
                let mut f = GateField::new("note", "Objection", note);
                f.argumentative = true;
                vec![f]
            }
            Contribution::Appeal {
                ground,
                justification,
                evidence,
                ..
            } => {
                ctx.kind = Kind::Appeal;
                ctx.ground = Some(ground.clone());
                ctx.evidence_count = Some(evidence.len() as f64);
                let mut f = GateField::new("justification", "Justification", justification);
                f.argumentative = true;
                vec![f]
            }
        };
        (fields, ctx)
    }

    /// Applies the write with the spec-mode writers. Returns the id of anything created
    /// (a thread's first version id for `Thread`).
    pub fn apply<E: Env>(
        &self,
        p: &mut Protocol<E>,
        d: &mut Debate,
        author: &str,
        side: &str,
    ) -> Outcome<Option<String>> {
        let (a, s) = (Some(author), Some(side));
        let version = |claim: &ClaimInput| VersionInput {
            author: Some(author.to_string()),
            side: Some(side.to_string()),
            kind: Some(claim.kind.clone()),
            assertion: Some(claim.assertion.clone()),
            grounds: Some(claim.grounds.clone()),
            warrant: Some(claim.warrant.clone()),
            evidence: claim.evidence.clone(),
            qualifier: Some(claim.qualifier.clone()),
            ..VersionInput::default()
        };
        Ok(match self {
            Contribution::Definition { term, definition } => {
                p.add_definition(
                    d,
                    Definition {
                        term: Some(term.clone()),
                        definition: Some(definition.clone()),
                        author: Some(author.to_string()),
                        side: Some(side.to_string()),
                    },
                );
                None
            }
            Contribution::Thread { title, claim } => {
                let t = p.create_thread(d, s, Some(title), a)?;
                Some(p.add_version(d, &t, version(claim))?)
            }
            Contribution::Version { thread_id, claim } => {
                Some(p.add_version(d, thread_id, version(claim))?)
            }
            Contribution::Challenge {
                thread_id,
                version_id,
                ground,
                text,
                evidence,
            } => Some(p.file_challenge(
                d,
                ChallengeInput {
                    thread_id: thread_id.clone(),
                    version_id: version_id.clone(),
                    ground: Some(ground.clone()),
                    text: Some(text.clone()),
                    evidence: evidence.clone(),
                    author: Some(author.to_string()),
                    side: Some(side.to_string()),
                },
            )?),
            Contribution::Respond { challenge_id, text } => {
                p.respond_challenge(d, challenge_id, Some(text), a, s)?;
                None
            }
            Contribution::Steelman { of_side, text } => {
                p.submit_steelman(d, *of_side, Some(text), a, s)?;
                None
            }
            Contribution::Certify { of_side } => {
                p.certify_steelman(d, *of_side, a, s)?;
                None
            }
            Contribution::ReturnSteelman { of_side, note } => {
                p.return_steelman(d, *of_side, Some(note), a, s)?;
                None
            }
            Contribution::Appeal {
                ground,
                justification,
                evidence,
                target_thread_ids,
            } => Some(p.file_appeal(
                d,
                AppealInput {
                    side: Some(side.to_string()),
                    author: Some(author.to_string()),
                    ground: Some(ground.clone()),
                    justification: Some(justification.clone()),
                    evidence: evidence.clone(),
                    target_thread_ids: target_thread_ids.clone(),
                },
            )?),
        })
    }
}
