//! Motions: the questions the protocol puts to the arbiter role (docs/ARCHITECTURE.md
//! "Motion"), derived from the document, shown to arbiters as a content projection
//! without authorship (SPEC section 2, commitment 2), and settled through the writers
//! once a panel's outcome is accepted.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::document::{Citation, Debate, Side, Version, phase, status};
use crate::env::Env;
use crate::error::{Code, Outcome, Refusal};
use crate::protocol::Protocol;

/// A question for the arbiter role.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Question {
    /// Merge a candidate (yes) or reject it (no). SPEC section 10.
    #[serde(rename_all = "camelCase")]
    Merge {
        thread_id: String,
        version_id: String,
    },
    /// Confirm a citation's claimed tier after retrieving it. SPEC section 5.
    #[serde(rename_all = "camelCase")]
    VerifyTier {
        thread_id: String,
        version_id: String,
        citation_index: u32,
    },
    /// Uphold (yes) or dismiss (no). SPEC section 7.
    #[serde(rename_all = "camelCase")]
    ResolveChallenge { challenge_id: String },
    /// A relevance step for a canonical version. SPEC section 9, R.
    #[serde(rename_all = "camelCase")]
    AssignRelevance {
        thread_id: String,
        version_id: String,
    },
    /// Certify a returned restatement over the objection (yes). SPEC 3.5.
    #[serde(rename_all = "camelCase")]
    CertifySteelman { of_side: Side },
    /// Advance from `from` (yes). SPEC section 6.
    AdvancePhase { from: String },
    /// Admit (yes) or deny (no) an appeal. SPEC section 12.
    #[serde(rename_all = "camelCase")]
    AdmitAppeal { appeal_id: String },
}

impl Question {
    /// A stable key: one open motion per key.
    pub fn key(&self) -> String {
        match self {
            Question::Merge { version_id, .. } => format!("merge:{version_id}"),
            Question::VerifyTier {
                version_id,
                citation_index,
                ..
            } => format!("verify-tier:{version_id}:{citation_index}"),
            Question::ResolveChallenge { challenge_id } => {
                format!("resolve-challenge:{challenge_id}")
            }
            Question::AssignRelevance { version_id, .. } => {
                format!("assign-relevance:{version_id}")
            }
            Question::CertifySteelman { of_side } => format!("certify-steelman:{of_side}"),
            Question::AdvancePhase { from } => format!("advance-phase:{from}"),
            Question::AdmitAppeal { appeal_id } => format!("admit-appeal:{appeal_id}"),
        }
    }

    /// The motion kind name (matches `MotionKind` on the wire).
    pub fn kind(&self) -> &'static str {
        match self {
            Question::Merge { .. } => "merge",
            Question::VerifyTier { .. } => "verify-tier",
            Question::ResolveChallenge { .. } => "resolve-challenge",
            Question::AssignRelevance { .. } => "assign-relevance",
            Question::CertifySteelman { .. } => "certify-steelman",
            Question::AdvancePhase { .. } => "advance-phase",
            Question::AdmitAppeal { .. } => "admit-appeal",
        }
    }
}

/// Questions the document itself leaves open: candidates awaiting merge review,
/// unresolved challenges, returned restatements, unweighted canonical claims during
/// adjudication and filed appeals.
///
/// SPEC section 10, verify first: a candidate citing an unverified T1 or T2 source gets
/// a tier-verification question, and its merge question waits until that verification
/// has been settled (`settled` holds the keys of questions already answered, whatever
/// the answer). Phase advances, and verification of a version already merged, are asked
/// for explicitly by a participant.
pub fn pending(d: &Debate, settled: &BTreeSet<String>) -> Vec<Question> {
    let mut out = Vec::new();
    for t in &d.threads {
        for v in &t.versions {
            if v.status != status::CANDIDATE {
                continue;
            }
            let mut waiting = false;
            for (i, c) in v.evidence.iter().enumerate() {
                let claimed = crate::scoring::tier_weight(c.tier.as_deref());
                if claimed > 3.0 && c.tier_verified != Some(true) {
                    let q = Question::VerifyTier {
                        thread_id: t.id.clone(),
                        version_id: v.id.clone(),
                        citation_index: i as u32,
                    };
                    if !settled.contains(&q.key()) {
                        waiting = true;
                        out.push(q);
                    }
                }
            }
            if !waiting {
                out.push(Question::Merge {
                    thread_id: t.id.clone(),
                    version_id: v.id.clone(),
                });
            }
        }
    }
    for c in &d.challenges {
        if c.resolution.as_deref().is_none_or(str::is_empty) {
            out.push(Question::ResolveChallenge {
                challenge_id: c.id.clone(),
            });
        }
    }
    for side in [Side::A, Side::B] {
        if d.steelmans.get(side).status == "returned" {
            out.push(Question::CertifySteelman { of_side: side });
        }
    }
    if d.phase == phase::ADJUDICATION {
        for t in &d.threads {
            if let Some(v) = t.canonical().filter(|v| v.relevance.is_none()) {
                out.push(Question::AssignRelevance {
                    thread_id: t.id.clone(),
                    version_id: v.id.clone(),
                });
            }
        }
    }
    for a in &d.appeals {
        if a.status == "filed" {
            out.push(Question::AdmitAppeal {
                appeal_id: a.id.clone(),
            });
        }
    }
    out
}

/// One labelled piece of content an arbiter reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectionItem {
    pub label: String,
    pub text: String,
    pub side: Option<Side>,
    #[serde(default)]
    pub citations: Vec<ProjectedCitation>,
}

/// A citation as an arbiter sees it: source, address and claimed tier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectedCitation {
    pub source: String,
    pub url: String,
    pub tier: String,
}

/// What an arbiter sees of a motion: the question and the content, never authorship.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    pub question: String,
    pub resolution: String,
    pub items: Vec<ProjectionItem>,
}

fn cites(ev: &[Citation]) -> Vec<ProjectedCitation> {
    ev.iter()
        .map(|c| ProjectedCitation {
            source: c.source.clone().unwrap_or_default(),
            url: c.url.clone().unwrap_or_default(),
            tier: c.tier.clone().unwrap_or_default(),
        })
        .collect()
}

fn claim_items(prefix: &str, v: &Version, side: Option<Side>) -> Vec<ProjectionItem> {
    let text = format!(
        "[{} / {}] {}\nGrounds: {}\nWarrant: {}",
        v.kind.as_deref().unwrap_or("?"),
        v.qualifier.as_deref().unwrap_or("?"),
        v.assertion.as_deref().unwrap_or(""),
        v.grounds.as_deref().unwrap_or(""),
        v.warrant.as_deref().unwrap_or("")
    );
    vec![ProjectionItem {
        label: prefix.to_string(),
        text,
        side,
        citations: cites(&v.evidence),
    }]
}

fn not_found(what: &str) -> Refusal {
    Refusal::new(
        Code::VersionNotFound,
        format!("the motion refers to {what}, which is not in the debate"),
    )
}

/// The thread and version a question names.
fn thread_version<'a>(
    d: &'a Debate,
    thread_id: &str,
    version_id: &str,
) -> Outcome<(&'a crate::document::Thread, &'a Version)> {
    let t = d.thread(thread_id).ok_or_else(|| not_found("a thread"))?;
    let v = t
        .version(version_id)
        .ok_or_else(|| not_found("a version"))?;
    Ok((t, v))
}

/// Builds the content projection of a question (SPEC commitment 2: no authorship).
pub fn projection(d: &Debate, q: &Question) -> Outcome<Projection> {
    let mut items = Vec::new();
    let question = match q {
        Question::Merge {
            thread_id,
            version_id,
        } => {
            let (t, v) = thread_version(d, thread_id, version_id)?;
            if let Some(inc) = t.canonical() {
                items.extend(claim_items("Incumbent", inc, t.side()));
            }
            items.extend(claim_items("Candidate", v, t.side()));
            "Should the candidate be merged? It must pass review and, if there is an incumbent, have strictly greater merit.".to_string()
        }
        Question::VerifyTier {
            thread_id,
            version_id,
            citation_index,
        } => {
            let (t, v) = thread_version(d, thread_id, version_id)?;
            let c = v
                .evidence
                .get(*citation_index as usize)
                .ok_or_else(|| not_found("a citation"))?;
            // The source to retrieve comes first: nodes fetch the first citation shown.
            items.push(ProjectionItem {
                label: "Source to retrieve".into(),
                text: c.source.clone().unwrap_or_default(),
                side: t.side(),
                citations: cites(std::slice::from_ref(c)),
            });
            items.extend(claim_items("Claim", v, t.side()));
            format!(
                "Retrieve the source at {} and confirm whether it is tier {} as claimed. Attach a receipt of the bytes retrieved.",
                c.url.as_deref().unwrap_or("(no url)"),
                c.tier.as_deref().unwrap_or("?")
            )
        }
        Question::ResolveChallenge { challenge_id } => {
            let c = d
                .challenge(challenge_id)
                .ok_or_else(|| not_found("a challenge"))?;
            let t = d
                .thread(&c.thread_id)
                .ok_or_else(|| not_found("a thread"))?;
            if let Some(v) = t.version(&c.version_id) {
                items.extend(claim_items("Challenged claim", v, t.side()));
            }
            items.push(ProjectionItem {
                label: format!("Challenge ({})", c.ground.as_deref().unwrap_or("?")),
                text: c.text.clone().unwrap_or_default(),
                side: c.side.as_deref().and_then(Side::parse),
                citations: cites(&c.evidence),
            });
            if let Some(r) = &c.response {
                items.push(ProjectionItem {
                    label: "Response".into(),
                    text: r.text.clone().unwrap_or_default(),
                    side: r.side.as_deref().and_then(Side::parse),
                    citations: Vec::new(),
                });
            }
            "Should the challenge be upheld (the claim is demoted) or dismissed?".to_string()
        }
        Question::AssignRelevance {
            thread_id,
            version_id,
        } => {
            let (t, v) = thread_version(d, thread_id, version_id)?;
            items.extend(claim_items("Claim", v, t.side()));
            "How far does this claim bear on the resolution? Answer 0.25, 0.5, 0.75 or 1.0."
                .to_string()
        }
        Question::CertifySteelman { of_side } => {
            let s = d.steelmans.get(*of_side);
            items.push(ProjectionItem {
                label: format!("Restatement of side {of_side}"),
                text: s.text.clone().unwrap_or_default(),
                side: Some(of_side.other()),
                citations: Vec::new(),
            });
            items.push(ProjectionItem {
                label: "Objection".into(),
                text: s.note.clone().unwrap_or_default(),
                side: Some(*of_side),
                citations: Vec::new(),
            });
            format!("Is this a fair restatement of side {of_side}'s case despite the objection?")
        }
        Question::AdvancePhase { from } if from == phase::APPEAL_REVIEW => {
            "May the appeal review conclude, with a revised verdict from the ledger as it now stands? Its prerequisites are checked mechanically as well.".to_string()
        }
        Question::AdvancePhase { from } => {
            format!(
                "May the debate advance from {from}? Its prerequisites are checked mechanically as well."
            )
        }
        Question::AdmitAppeal { appeal_id } => {
            let a = d.appeal(appeal_id).ok_or_else(|| not_found("an appeal"))?;
            items.push(ProjectionItem {
                label: format!("Appeal ({})", a.ground.as_deref().unwrap_or("?")),
                text: a.justification.clone().unwrap_or_default(),
                side: a.side.as_deref().and_then(Side::parse),
                citations: cites(&a.evidence),
            });
            "Taken at face value, could this appeal change the verdict band?".to_string()
        }
    };
    Ok(Projection {
        question,
        resolution: d.resolution.clone(),
        items,
    })
}

/// A panel's accepted answer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    Yes,
    No,
    Relevance(f64),
}

/// Applies an accepted answer through the writers, with the panel's rationale
/// (SPEC section 4: every arbiter decision carries one).
pub fn settle<E: Env>(
    p: &mut Protocol<E>,
    d: &mut Debate,
    q: &Question,
    answer: Answer,
    rationale: &str,
    actor: &str,
) -> Outcome {
    let (r, a) = (Some(rationale), Some(actor));
    match (q, answer) {
        (
            Question::Merge {
                thread_id,
                version_id,
            },
            Answer::Yes,
        ) => match p.merge_version(d, thread_id, version_id, r, a) {
            Err(e) if e.code == Code::MergeNotOnMerit => {
                let why = format!("{rationale} Merge refused on merit: {}", e.message);
                p.reject_version(d, thread_id, version_id, Some(&why), a)
            }
            other => other,
        },
        (
            Question::Merge {
                thread_id,
                version_id,
            },
            Answer::No,
        ) => p.reject_version(d, thread_id, version_id, r, a),
        (
            Question::VerifyTier {
                thread_id,
                version_id,
                citation_index,
            },
            Answer::Yes,
        ) => p.verify_tier(d, thread_id, version_id, *citation_index as i64, r, a),
        (Question::ResolveChallenge { challenge_id }, Answer::Yes) => {
            p.resolve_challenge(d, challenge_id, "upheld", r, a)
        }
        (Question::ResolveChallenge { challenge_id }, Answer::No) => {
            p.resolve_challenge(d, challenge_id, "dismissed", r, a)
        }
        (
            Question::AssignRelevance {
                thread_id,
                version_id,
            },
            Answer::Relevance(x),
        ) => {
            p.set_relevance(d, thread_id, version_id, Some(x))?;
            let title = d
                .thread(thread_id)
                .map(|t| t.title_or_id().to_string())
                .unwrap_or_default();
            p.add_log(
                d,
                a,
                None,
                "relevance-assigned",
                format!("{title}: {x}; {rationale}"),
            );
            Ok(())
        }
        (Question::CertifySteelman { of_side }, Answer::Yes) => {
            p.arbiter_certify_steelman(d, *of_side, r, a)
        }
        (Question::AdvancePhase { from }, Answer::Yes) => {
            if d.phase != *from {
                return Err(Refusal::new(
                    Code::PhaseNotAdvanceable,
                    format!(
                        "the motion asked to advance from {from}, but the debate is in {}",
                        d.phase
                    ),
                ));
            }
            // An appeal review does not advance: a panel's yes concludes it (SPEC
            // section 12), issuing the revised verdict and closing the debate again.
            if from == phase::APPEAL_REVIEW {
                return p.conclude_appeal_review(d, a, r).map(|_| ());
            }
            p.advance_phase(d, a)?;
            if d.phase == phase::VERDICT {
                p.issue_verdict(d, None, None, a);
            }
            Ok(())
        }
        (Question::AdmitAppeal { appeal_id }, Answer::Yes) => {
            p.decide_appeal(d, appeal_id, true, r, a)
        }
        (Question::AdmitAppeal { appeal_id }, Answer::No) => {
            p.decide_appeal(d, appeal_id, false, r, a)
        }
        // A "no" on verification, certification or an advance changes nothing.
        (
            Question::VerifyTier { .. }
            | Question::CertifySteelman { .. }
            | Question::AdvancePhase { .. },
            Answer::No,
        ) => Ok(()),
        (q, ans) => Err(Refusal::new(
            Code::RelevanceInvalid,
            format!(
                "answer {ans:?} does not fit a {} motion; relevance motions take a relevance step, others yes or no",
                q.kind()
            ),
        )),
    }
}
