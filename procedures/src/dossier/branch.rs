//! One advocate's branch: its report, nomination and rebuttals, each checked against the
//! framing, and its terminal status (`seeds/spellweaver-crucible.txt`, "Refusal and
//! recovery": failed branches and incomplete rebuttals stay visible).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::panel::{Finding, ProcedureError};

use super::framing::{Advocate, Framing};
use super::input::{ClaimRef, FailStatus, Rebuttal, ReportClaim};
use super::refusal::{f, id, text};

/// Where the run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    #[serde(rename = "clash_i")]
    ClashI,
    Temper,
    #[serde(rename = "clash_ii")]
    ClashII,
    Quench,
    Done,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::ClashI => "Clash I",
            Phase::Temper => "Temper",
            Phase::ClashII => "Clash II",
            Phase::Quench => "Quench",
            Phase::Done => "done",
        }
    }
}

/// A Clash I report as retained, with the digest later phases cite it by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub claims: Vec<ReportClaim>,
    pub missing_evidence: Vec<String>,
    /// SHA-256 of the report's JSON: the original report reference the join keeps.
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nomination {
    pub strongest: Vec<String>,
    pub concession: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub status: FailStatus,
    pub phase: Phase,
    pub note: String,
}

/// How a branch ended, for the attribution table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TerminalStatus {
    InProgress,
    Complete,
    /// Rebutted some projected claims and left these unanswered.
    IncompleteRebuttal {
        unanswered: Vec<ClaimRef>,
    },
    Failed(Failure),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Branch {
    pub advocate: Advocate,
    pub report: Option<Report>,
    pub nomination: Option<Nomination>,
    pub rebuttals: Option<Vec<Rebuttal>>,
    pub failed: Option<Failure>,
}

impl Branch {
    pub fn new(advocate: Advocate) -> Branch {
        Branch {
            advocate,
            report: None,
            nomination: None,
            rebuttals: None,
            failed: None,
        }
    }

    pub fn id(&self) -> &str {
        &self.advocate.id
    }

    /// The branch owes nothing more in `phase`.
    pub fn done_with(&self, phase: Phase) -> bool {
        self.failed.is_some()
            || match phase {
                Phase::ClashI => self.report.is_some(),
                Phase::Temper => self.nomination.is_some(),
                Phase::ClashII => self.rebuttals.is_some(),
                Phase::Quench | Phase::Done => true,
            }
    }

    /// A claim of this branch's report.
    pub fn claim(&self, id: &str) -> Option<&ReportClaim> {
        self.report.as_ref()?.claims.iter().find(|c| c.id == id)
    }

    /// The branch's nominated claims, in nomination order.
    pub fn nominated(&self) -> Vec<&ReportClaim> {
        let Some(n) = &self.nomination else {
            return Vec::new();
        };
        n.strongest.iter().filter_map(|c| self.claim(c)).collect()
    }

    pub fn status(&self, projected: &[ClaimRef]) -> TerminalStatus {
        if let Some(f) = &self.failed {
            return TerminalStatus::Failed(f.clone());
        }
        let Some(rebuttals) = &self.rebuttals else {
            return TerminalStatus::InProgress;
        };
        let unanswered: Vec<ClaimRef> = projected
            .iter()
            .filter(|t| !rebuttals.iter().any(|r| &r.target == *t))
            .cloned()
            .collect();
        if unanswered.is_empty() {
            TerminalStatus::Complete
        } else {
            TerminalStatus::IncompleteRebuttal { unanswered }
        }
    }

    pub fn take_report(
        &mut self,
        claims: Vec<ReportClaim>,
        missing_evidence: Vec<String>,
        fr: &Framing,
    ) -> Result<(), ProcedureError> {
        let at = format!("advocate {} report", self.id());
        let mut out = Vec::new();
        if claims.is_empty() || claims.len() > fr.limits.max_claims as usize {
            out.push(f(
                "dossier.report_claims",
                &format!("{at}.claims"),
                &format!(
                    "{} claims; a report makes 1 to {} claims",
                    claims.len(),
                    fr.limits.max_claims
                ),
            ));
        }
        for (i, c) in claims.iter().enumerate() {
            let cat = format!("{at}.claims[{i}]");
            out.extend(id(&format!("{cat}.id"), &c.id));
            if claims[..i].iter().any(|x| x.id == c.id) {
                out.push(f(
                    "dossier.claim_id_unique",
                    &format!("{cat}.id"),
                    "claim id used twice in the report",
                ));
            }
            out.extend(claim_text(&format!("{cat}.text"), &c.text, fr));
            out.extend(
                text(&format!("{cat}.defeat_condition"), &c.defeat_condition).map(|mut x| {
                    x.rule = "dossier.claim_defeat_condition".into();
                    x.reason = format!("{}: every claim says what would defeat it", x.reason);
                    x
                }),
            );
            out.extend(citations(&format!("{cat}.citations"), &c.citations, fr));
            for (j, u) in c.unknowns.iter().enumerate() {
                out.extend(text(&format!("{cat}.unknowns[{j}]"), u));
            }
        }
        for (j, m) in missing_evidence.iter().enumerate() {
            out.extend(text(&format!("{at}.missing_evidence[{j}]"), m));
        }
        refuse(out)?;
        let digest = digest(&claims, &missing_evidence)
            .map_err(|e| ProcedureError::Refused(vec![f("dossier.unencodable", &at, &e)]))?;
        self.report = Some(Report {
            claims,
            missing_evidence,
            digest,
        });
        Ok(())
    }

    pub fn take_nomination(
        &mut self,
        strongest: Vec<String>,
        concession: String,
        fr: &Framing,
    ) -> Result<(), ProcedureError> {
        let at = format!("advocate {} nomination", self.id());
        let mut out = Vec::new();
        if strongest.is_empty() || strongest.len() > fr.limits.max_nominated as usize {
            out.push(f(
                "dossier.nominate_count",
                &format!("{at}.strongest"),
                &format!(
                    "{} nominated; nominate 1 to {} of your own claims",
                    strongest.len(),
                    fr.limits.max_nominated
                ),
            ));
        }
        for (i, c) in strongest.iter().enumerate() {
            if self.claim(c).is_none() {
                out.push(f("dossier.nominate_own", &format!("{at}.strongest[{i}]"), &format!("{c} is not a claim of your Clash I report; nominate only your own claims, by id")));
            }
            if strongest[..i].contains(c) {
                out.push(f(
                    "dossier.nominate_count",
                    &format!("{at}.strongest[{i}]"),
                    "nominated twice",
                ));
            }
        }
        out.extend(text(&format!("{at}.concession"), &concession).map(|mut x| {
            x.rule = "dossier.concession_required".into();
            x.reason = format!(
                "{}: Temper joins each advocate's strongest claims with a concession",
                x.reason
            );
            x
        }));
        refuse(out)?;
        self.nomination = Some(Nomination {
            strongest,
            concession,
        });
        Ok(())
    }

    /// Rebuttals may address only claims in `projection`, each at most once.
    pub fn take_rebuttals(
        &mut self,
        rebuttals: Vec<Rebuttal>,
        projection: &[ClaimRef],
        fr: &Framing,
    ) -> Result<(), ProcedureError> {
        let at = format!("advocate {} rebuttal", self.id());
        let mut out = Vec::new();
        for (i, r) in rebuttals.iter().enumerate() {
            let rat = format!("{at}.rebuttals[{i}]");
            if !projection.contains(&r.target) {
                out.push(f(
                    "dossier.rebuttal_outside_projection",
                    &format!("{rat}.target"),
                    &format!("{}/{} is not in your Clash II projection (the opposing advocates' nominated claims); rebut only the claims your brief shows", r.target.advocate, r.target.claim),
                ));
            }
            if rebuttals[..i].iter().any(|x| x.target == r.target) {
                out.push(f(
                    "dossier.rebuttal_duplicate",
                    &format!("{rat}.target"),
                    "one rebuttal per projected claim; merge them",
                ));
            }
            out.extend(claim_text(&format!("{rat}.text"), &r.text, fr));
            out.extend(citations(&format!("{rat}.citations"), &r.citations, fr));
        }
        refuse(out)?;
        self.rebuttals = Some(rebuttals);
        Ok(())
    }

    pub fn fail(
        &mut self,
        status: FailStatus,
        note: String,
        phase: Phase,
    ) -> Result<(), ProcedureError> {
        let at = format!("advocate {} fail", self.id());
        refuse(text(&format!("{at}.note"), &note).into_iter().collect())?;
        self.failed = Some(Failure {
            status,
            phase,
            note,
        });
        Ok(())
    }
}

fn claim_text(at: &str, t: &str, fr: &Framing) -> Option<Finding> {
    text(at, t).or_else(|| {
        (t.chars().count() > fr.limits.max_claim_chars as usize).then(|| {
            f(
                "dossier.claim_size",
                at,
                &format!(
                    "longer than the framing's {} characters per claim; shorten it",
                    fr.limits.max_claim_chars
                ),
            )
        })
    })
}

fn citations(at: &str, cites: &[String], fr: &Framing) -> Vec<Finding> {
    cites
        .iter()
        .enumerate()
        .filter(|(_, c)| !fr.evidence.iter().any(|e| &e.id == *c))
        .map(|(i, c)| f("dossier.citation_unknown", &format!("{at}[{i}]"), &format!("{c} is not an evidence-floor id; cite the shared evidence by id, or list what is missing under missing_evidence")))
        .collect()
}

/// The report's digest, or why its JSON could not be written (never the digest of empty
/// bytes, which every unencodable report would share).
fn digest(claims: &[ReportClaim], missing: &[String]) -> Result<String, String> {
    let bytes = serde_json::to_vec(&(claims, missing))
        .map_err(|e| format!("the report cannot be encoded as JSON ({e}); send plain text"))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

fn refuse(out: Vec<Finding>) -> Result<(), ProcedureError> {
    if out.is_empty() {
        Ok(())
    } else {
        Err(ProcedureError::Refused(out))
    }
}
