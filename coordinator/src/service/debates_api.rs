//! The typed debate API (`crucible.coordinator.v1.Debates`): one RPC per kind of write,
//! each naming its author, and typed reads. Every write becomes the same [`Command`] the
//! JSON `Write` RPC carries and goes through the same path after decoding
//! ([`crate::service::replica::submit_command`]: forwarding, intake with the Gate and the
//! rate limit, proposal), so both APIs refuse and accept exactly the same writes.

use std::sync::Arc;

use crucible::contribution::{ClaimInput, Contribution};
use crucible::document::{Citation, Side};
use panel_proto::pb as wire;
use prost::Message;
use tonic::{Request, Response, Status};

use crate::pb::coordinator as pb;
use crate::pb::coordinator::debates_server::Debates;
use crate::service::replica::{Caller, Replica, submit_command};
use panel_machine::WireRuling;
use panel_machine::authorship::ContributorSignature;
use panel_machine::model;
use panel_machine::rules::acceptance::Rule;
use panel_machine::{ClientCommand, ContributionSubmission, DebateSpec};
use panel_machine::{Motion, MotionStatus};

pub(crate) struct DebatesService(pub(crate) Arc<Replica>);

fn missing(what: &str) -> Status {
    Status::invalid_argument(format!("{what} is required"))
}

fn side(s: &str, field: &str) -> Result<Side, Status> {
    match s {
        "A" | "a" => Ok(Side::A),
        "B" | "b" => Ok(Side::B),
        other => Err(Status::invalid_argument(format!(
            "{field} must be \"A\" or \"B\", got {other:?}"
        ))),
    }
}

fn citations(cs: Vec<pb::Citation>) -> Vec<Citation> {
    cs.into_iter()
        .map(|c| Citation::new(&c.source, &c.url, &c.tier))
        .collect()
}

fn claim(c: Option<pb::Claim>) -> Result<ClaimInput, Status> {
    let c = c.ok_or_else(|| missing("claim"))?;
    Ok(ClaimInput {
        kind: c.r#type,
        assertion: c.assertion,
        grounds: c.grounds,
        warrant: c.warrant,
        evidence: citations(c.evidence),
        qualifier: c.qualifier,
    })
}

/// Sends one typed command through the same checks as the JSON `Write`, under the
/// caller's ids (no JSON decode on the way).
async fn write(
    replica: &Arc<Replica>,
    caller: &Caller,
    client_id: String,
    request_id: u64,
    command: ClientCommand,
) -> Result<Response<pb::WriteReply>, Status> {
    submit_command(replica, client_id, request_id, command, caller)
        .await
        .map(Response::new)
}

/// A contribution under its author: checks the side, carries the signature.
async fn contribute(
    replica: &Arc<Replica>,
    caller: &Caller,
    by: Option<pb::Authored>,
    contribution: Contribution,
) -> Result<Response<pb::WriteReply>, Status> {
    contribute_as(replica, caller, by, contribution, false).await
}

/// [`contribute`], an appeal put to a random sample when `random_sample`.
async fn contribute_as(
    replica: &Arc<Replica>,
    caller: &Caller,
    by: Option<pb::Authored>,
    contribution: Contribution,
    random_sample: bool,
) -> Result<Response<pb::WriteReply>, Status> {
    let by = by.ok_or_else(|| missing("by (the author, debate and side of the write)"))?;
    if by.author.trim().is_empty() {
        return Err(missing("by.author"));
    }
    let side = side(&by.side, "by.side")?;
    let signature = by.signature.map(|s| ContributorSignature {
        public_key: hex::encode(s.public_key).into(),
        signature: hex::encode(s.signature).into(),
    });
    let sub = ContributionSubmission {
        debate_id: by.debate_id,
        author: by.author,
        side: side.as_str().to_string(),
        model_family: (!by.model_family.is_empty()).then_some(by.model_family),
        contribution,
        hints: Default::default(),
        signature,
        random_sample,
    };
    write(
        replica,
        caller,
        by.client_id,
        by.request_id,
        ClientCommand::Contribute(sub),
    )
    .await
}

fn status_name(m: &Motion) -> &'static str {
    match &m.status {
        MotionStatus::Open => "open",
        MotionStatus::Decided(v) if v.is_accepted() => "accepted",
        MotionStatus::Decided(_) => "deadlocked",
    }
}

/// The signed rulings of a motion (bare ones and those opened from reveals), each named
/// by the arbiter whose registered key signed it and the stance it was seated under.
fn rulings(m: &Motion, arbiters: &model::Table<model::Arbiter>) -> Vec<pb::RulingView> {
    // `rulings` holds the bare rulings and those opened from reveals, as apply counted them.
    m.rulings
        .iter()
        .filter_map(|w: &WireRuling| w.decode().ok())
        .filter_map(|sr| {
            let r = sr.ruling.as_ref()?;
            let key = hex::encode(&r.arbiter_key);
            let seat = m.seats.iter().find(|s| {
                arbiters
                    .get(&s.arbiter_id)
                    .is_some_and(|a| a.registration.public_key.to_hex() == key)
            });
            let decision =
                wire::Decision::try_from(r.decision).unwrap_or(wire::Decision::Unspecified);
            Some(pb::RulingView {
                arbiter_id: seat.map_or(key.clone(), |s| s.arbiter_id.clone()),
                stance: seat.map_or_else(String::new, |s| format!("{:?}", s.stance)),
                decision: panel_proto::ruling_check::decision_name(decision).to_string(),
                probability: r.probability,
                rationale: r.rationale.clone(),
                signed_ruling: sr.encode_to_vec(),
            })
        })
        .collect()
}

/// `CreateDebateRequest.rule`, refused by name when it is no `AcceptanceRule`.
fn acceptance_rule(rule: i32) -> Result<Rule, Status> {
    match pb::AcceptanceRule::try_from(rule) {
        Ok(pb::AcceptanceRule::Independent) => Ok(Rule::Independent),
        Ok(pb::AcceptanceRule::HeadCount) => Ok(Rule::HeadCount),
        Ok(pb::AcceptanceRule::Weighted) => Ok(Rule::Weighted),
        Err(_) => Err(Status::invalid_argument(format!(
            "rule: {rule} is not an AcceptanceRule (0 independent, 1 head count, 2 weighted)"
        ))),
    }
}

#[tonic::async_trait]
impl Debates for DebatesService {
    async fn create_debate(
        &self,
        request: Request<pb::CreateDebateRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let spec = DebateSpec {
            resolution: r.resolution,
            pos_a: r.pos_a,
            pos_b: r.pos_b,
            burden: (!r.burden.is_empty()).then_some(r.burden),
            claim_budget: None,
            seats: if r.seats == 0 { 4 } else { r.seats as usize },
            min_per_stance: if r.min_per_stance == 0 {
                2
            } else {
                r.min_per_stance as usize
            },
            policy: Some(acceptance_rule(r.rule)?.policy()),
            simulation: false,
            convener: r.convener,
        };
        write(
            &self.0,
            &caller,
            r.client_id,
            r.request_id,
            ClientCommand::CreateDebate(spec),
        )
        .await
    }

    async fn define(
        &self,
        request: Request<pb::DefineRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let c = Contribution::Definition {
            term: r.term,
            definition: r.definition,
        };
        contribute(&self.0, &caller, r.by, c).await
    }

    async fn open_thread(
        &self,
        request: Request<pb::OpenThreadRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let c = Contribution::Thread {
            title: r.title,
            claim: claim(r.claim)?,
        };
        contribute(&self.0, &caller, r.by, c).await
    }

    async fn add_version(
        &self,
        request: Request<pb::AddVersionRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let c = Contribution::Version {
            thread_id: r.thread_id,
            claim: claim(r.claim)?,
        };
        contribute(&self.0, &caller, r.by, c).await
    }

    async fn challenge(
        &self,
        request: Request<pb::ChallengeRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let c = Contribution::Challenge {
            thread_id: r.thread_id,
            version_id: r.version_id,
            ground: r.ground,
            text: r.text,
            evidence: citations(r.evidence),
        };
        contribute(&self.0, &caller, r.by, c).await
    }

    async fn respond(
        &self,
        request: Request<pb::RespondRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let c = Contribution::Respond {
            challenge_id: r.challenge_id,
            text: r.text,
        };
        contribute(&self.0, &caller, r.by, c).await
    }

    async fn steelman(
        &self,
        request: Request<pb::SteelmanRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let c = Contribution::Steelman {
            of_side: side(&r.of_side, "of_side")?,
            text: r.text,
        };
        contribute(&self.0, &caller, r.by, c).await
    }

    async fn certify(
        &self,
        request: Request<pb::CertifyRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let c = Contribution::Certify {
            of_side: side(&r.of_side, "of_side")?,
        };
        contribute(&self.0, &caller, r.by, c).await
    }

    async fn return_steelman(
        &self,
        request: Request<pb::ReturnSteelmanRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let c = Contribution::ReturnSteelman {
            of_side: side(&r.of_side, "of_side")?,
            note: r.note,
        };
        contribute(&self.0, &caller, r.by, c).await
    }

    async fn appeal(
        &self,
        request: Request<pb::AppealRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let c = Contribution::Appeal {
            ground: r.ground,
            justification: r.justification,
            evidence: citations(r.evidence),
            target_thread_ids: r.target_thread_ids,
        };
        contribute_as(&self.0, &caller, r.by, c, r.random_sample).await
    }

    async fn reissue_verdict(
        &self,
        request: Request<pb::ReissueVerdictRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        let r = request.into_inner();
        let command = ClientCommand::ReissueVerdict {
            debate_id: r.debate_id,
            author: r.author,
        };
        write(&self.0, &caller, r.client_id, r.request_id, command).await
    }

    async fn get_debate(
        &self,
        request: Request<pb::DebateRef>,
    ) -> Result<Response<pb::DebateDocument>, Status> {
        // User-facing reads are linearizable (docs/coordinator/reads-and-writes.md, "Reads").
        self.0
            .read_barrier(pb::ReadConsistency::Linearizable)
            .await?;
        let debate_id = request.into_inner().debate_id;
        let found = self.0.sm.read(|a| {
            a.state.debates.get(&debate_id).map(|r| {
                (
                    r.debate.to_json().to_string(),
                    a.last_applied.map_or(0, |l| l.index),
                )
            })
        });
        let (document_json, applied_index) = found.ok_or_else(|| {
            Status::not_found(format!(
                "debate {debate_id:?} does not exist; ListDebates names the debates"
            ))
        })?;
        Ok(Response::new(pb::DebateDocument {
            debate_id,
            document_json,
            applied_index,
        }))
    }

    async fn list_debates(
        &self,
        _request: Request<pb::ListDebatesRequest>,
    ) -> Result<Response<pb::DebateList>, Status> {
        // User-facing reads are linearizable (docs/coordinator/reads-and-writes.md, "Reads").
        self.0
            .read_barrier(pb::ReadConsistency::Linearizable)
            .await?;
        let debates = self.0.sm.read(|a| {
            a.state
                .debates
                .iter()
                .map(|(id, r)| pb::DebateSummary {
                    debate_id: id.clone(),
                    resolution: r.debate.resolution.clone(),
                    phase: r.debate.phase.clone(),
                })
                .collect()
        });
        Ok(Response::new(pb::DebateList { debates }))
    }

    async fn list_motions(
        &self,
        request: Request<pb::DebateRef>,
    ) -> Result<Response<pb::MotionList>, Status> {
        // User-facing reads are linearizable (docs/coordinator/reads-and-writes.md, "Reads").
        self.0
            .read_barrier(pb::ReadConsistency::Linearizable)
            .await?;
        let debate_id = request.into_inner().debate_id;
        let motions = self.0.sm.read(|a| {
            a.state
                .motions
                .of_debate(&debate_id)
                .iter()
                .map(|m| pb::MotionView {
                    motion_id: m.spec.motion_id.clone(),
                    debate_id: m.spec.debate_id.clone(),
                    kind: format!("{:?}", m.spec.kind),
                    status: status_name(m).to_string(),
                    question_json: serde_json::to_string(&m.spec.question).unwrap_or_default(),
                    rulings: rulings(m, &a.state.arbiters),
                    motion_json: serde_json::to_string(&**m).unwrap_or_default(),
                })
                .collect()
        });
        Ok(Response::new(pb::MotionList { motions }))
    }

    async fn get_verdicts(
        &self,
        request: Request<pb::DebateRef>,
    ) -> Result<Response<pb::VerdictList>, Status> {
        // User-facing reads are linearizable (docs/coordinator/reads-and-writes.md, "Reads").
        self.0
            .read_barrier(pb::ReadConsistency::Linearizable)
            .await?;
        let debate_id = request.into_inner().debate_id;
        let found = self.0.sm.read(|a| {
            a.state.debates.get(&debate_id).map(|r| {
                r.debate
                    .verdicts
                    .iter()
                    .map(|v| serde_json::to_string(v).unwrap_or_default())
                    .collect::<Vec<_>>()
            })
        });
        let verdict_json = found.ok_or_else(|| {
            Status::not_found(format!(
                "debate {debate_id:?} does not exist; ListDebates names the debates"
            ))
        })?;
        Ok(Response::new(pb::VerdictList { verdict_json }))
    }

    async fn export_record(
        &self,
        _request: Request<pb::ExportRequest>,
    ) -> Result<Response<pb::RecordExport>, Status> {
        // User-facing reads are linearizable (docs/coordinator/reads-and-writes.md, "Reads").
        self.0
            .read_barrier(pb::ReadConsistency::Linearizable)
            .await?;
        let bundle = crate::service::replica::signed_export(&self.0)?;
        let bundle_json =
            serde_json::to_string(&bundle).map_err(|e| Status::internal(format!("export: {e}")))?;
        Ok(Response::new(pb::RecordExport { bundle_json }))
    }
}
