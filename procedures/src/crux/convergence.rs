//! The panel as mediator (docs/CRUX.md, "Convergence"): one report question, then the
//! proposed cruxes put back to the panel one by one, then the verdict question; a
//! deadlock widens the panel a bounded number of times and then ends the run as a
//! recorded deadlock, every arbiter's crux kept as dissent.

use serde::{Deserialize, Serialize};

use super::contract::CruxReport;
use super::gate::gate;
use super::materials::Materials;
use super::words::content_stems;
use crate::panel::{Finding, PanelOutcome, PanelRuling, Prior, Settlement, Tally, tallies};

/// Proposed cruxes put back to the panel, at most.
pub const MAX_CANDIDATES: usize = 3;
/// Re-asks of a deadlocked question, each with two more seats.
pub const MAX_REASKS: u32 = 2;
pub const SEATS_PER_REASK: u32 = 2;
/// Two cruxes are one when this share (percent) of their content words is common.
pub const SAME_CRUX_PERCENT: usize = 60;

/// One question and how often it has been re-asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ask {
    pub base: String,
    pub round: u32,
}

impl Ask {
    fn new(base: impl Into<String>) -> Self {
        Ask {
            base: base.into(),
            round: 0,
        }
    }

    /// Keys differ per round, so a re-ask is a new motion.
    pub fn key(&self) -> String {
        if self.round == 0 {
            self.base.clone()
        } else {
            format!("{}/r{}", self.base, self.round)
        }
    }

    pub fn extra_seats(&self) -> u32 {
        self.round * SEATS_PER_REASK
    }

    /// The next round, if one is left.
    fn widened(&self) -> Option<Ask> {
        (self.round < MAX_REASKS).then(|| Ask {
            base: self.base.clone(),
            round: self.round + 1,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    Mediating,
    Converging,
    Verdict,
    Done,
}

/// What the record says of the order an arbiter was shown the report's items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OrderAudit {
    /// An order of exactly the report's items, as the machine derived it.
    Recorded,
    /// Not an order of the report's items: the record is wrong.
    Malformed,
    NotRecorded,
}

/// One arbiter's crux report and what the gate said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportRecord {
    pub key: String,
    pub arbiter_id: String,
    pub prior: Prior,
    pub organisation: String,
    pub model_family: Option<String>,
    pub yes: Option<bool>,
    pub presented: Vec<String>,
    pub order: OrderAudit,
    /// `None` when the rationale was not a report at all.
    pub report: Option<CruxReport>,
    /// Empty when the report passed the gate and counts.
    pub gate: Vec<Finding>,
    /// The raw rationale when it did not decode, for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

impl ReportRecord {
    pub fn counts(&self) -> bool {
        self.gate.is_empty() && self.report.is_some()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CandidateStatus {
    Open,
    Accepted,
    Rejected,
    Deadlocked,
}

/// A proposed crux put back to the panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub crux: String,
    pub why_both_depend: String,
    pub resolved_by: String,
    /// Arbiters whose gated reports named it.
    pub proposed_by: Vec<String>,
    pub ask: Ask,
    pub status: CandidateStatus,
    /// Yes rulings on its question, the last round.
    pub support: u32,
    pub tallies: Vec<(Prior, Tally)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VerdictAnswer {
    Warranted,
    NotWarranted,
    Deadlocked,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub answer: VerdictAnswer,
    pub tallies: Vec<(Prior, Tally)>,
    pub rulings: Vec<PanelRuling>,
}

/// The report question's own outcome in one round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundOutcome {
    pub key: String,
    pub outcome: PanelOutcome,
    pub tallies: Vec<(Prior, Tally)>,
}

/// The mediation's state and record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mediation {
    pub stage: Stage,
    pub report_ask: Ask,
    pub reports: Vec<ReportRecord>,
    /// The report question's own outcome per round (yes: a verdict is warranted now).
    pub report_outcomes: Vec<RoundOutcome>,
    pub candidates: Vec<Candidate>,
    pub accepted: Option<usize>,
    pub verdict_ask: Option<Ask>,
    pub verdict: Option<Verdict>,
    pub deadlock: Option<String>,
    pub notes: Vec<String>,
    /// Every settlement, verbatim, in the order it arrived.
    pub settlements: Vec<Settlement>,
}

/// A pending question, before the materials are attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asking {
    Report(Ask),
    Candidate(usize, Ask),
    Verdict(Ask),
}

impl Default for Mediation {
    fn default() -> Self {
        Mediation {
            stage: Stage::Mediating,
            report_ask: Ask::new("crux/report"),
            reports: Vec::new(),
            report_outcomes: Vec::new(),
            candidates: Vec::new(),
            accepted: None,
            verdict_ask: None,
            verdict: None,
            deadlock: None,
            notes: Vec::new(),
            settlements: Vec::new(),
        }
    }
}

impl Mediation {
    /// What the panel must answer now.
    pub fn asking(&self) -> Vec<Asking> {
        match self.stage {
            Stage::Mediating => vec![Asking::Report(self.report_ask.clone())],
            Stage::Converging => self
                .candidates
                .iter()
                .enumerate()
                .filter(|(_, c)| c.status == CandidateStatus::Open)
                .map(|(i, c)| Asking::Candidate(i, c.ask.clone()))
                .collect(),
            Stage::Verdict => self
                .verdict_ask
                .iter()
                .map(|a| Asking::Verdict(a.clone()))
                .collect(),
            Stage::Done => Vec::new(),
        }
    }

    /// Which pending question a key names.
    pub fn find(&self, key: &str) -> Option<Asking> {
        self.asking().into_iter().find(|a| match a {
            Asking::Report(k) | Asking::Candidate(_, k) | Asking::Verdict(k) => k.key() == key,
        })
    }

    /// Takes a settlement for a pending question (the caller checked the key).
    pub fn settle(&mut self, asking: Asking, s: &Settlement, m: &Materials) {
        self.settlements.push(s.clone());
        match asking {
            Asking::Report(ask) => self.settle_report(&ask, s, m),
            Asking::Candidate(i, ask) => self.settle_candidate(i, &ask, s),
            Asking::Verdict(ask) => self.settle_verdict(&ask, s),
        }
    }

    fn settle_report(&mut self, ask: &Ask, s: &Settlement, m: &Materials) {
        let key = ask.key();
        self.report_outcomes.push(RoundOutcome {
            key: key.clone(),
            outcome: s.outcome,
            tallies: tallies(&s.rulings),
        });
        let anchors = m.anchors();
        for r in &s.rulings {
            self.reports.push(record_report(&key, r, m, &anchors));
        }
        let counted: Vec<&ReportRecord> = self
            .reports
            .iter()
            .filter(|r| r.key == key && r.counts())
            .collect();
        if counted.is_empty() {
            match ask.widened() {
                Some(next) => {
                    self.notes.push(format!(
                        "{key}: no crux report passed the gate; re-asked as {} with {} more seats",
                        next.key(),
                        next.extra_seats()
                    ));
                    self.report_ask = next;
                }
                None => self.end_in_deadlock(format!(
                    "no crux report passed the gate in {} rounds",
                    ask.round + 1
                )),
            }
            return;
        }
        self.candidates = propose(&counted);
        let proposed: usize = distinct(&counted).len();
        if proposed > self.candidates.len() {
            self.notes.push(format!(
                "{proposed} distinct cruxes were proposed; the {} with most support were put \
                 to the panel, the rest are dissent",
                self.candidates.len()
            ));
        }
        self.stage = Stage::Converging;
    }

    fn settle_candidate(&mut self, i: usize, ask: &Ask, s: &Settlement) {
        let any_accepted = self
            .candidates
            .iter()
            .any(|c| c.status == CandidateStatus::Accepted);
        let Some(c) = self.candidates.get_mut(i) else {
            return;
        };
        c.support = s.rulings.iter().filter(|r| r.yes == Some(true)).count() as u32;
        c.tallies = tallies(&s.rulings);
        c.status = match s.outcome {
            PanelOutcome::Yes => CandidateStatus::Accepted,
            PanelOutcome::No => CandidateStatus::Rejected,
            PanelOutcome::Deadlocked => match ask.widened().filter(|_| !any_accepted) {
                Some(next) => {
                    c.ask = next;
                    CandidateStatus::Open
                }
                None => CandidateStatus::Deadlocked,
            },
        };
        if self
            .candidates
            .iter()
            .any(|c| c.status == CandidateStatus::Open)
        {
            return;
        }
        self.choose();
    }

    /// All candidates settled: the accepted one with most support, or a deadlock.
    fn choose(&mut self) {
        let accepted: Vec<usize> = self
            .candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.status == CandidateStatus::Accepted)
            .map(|(i, _)| i)
            .collect();
        let best = accepted.iter().copied().max_by(|&a, &b| {
            let (ca, cb) = (&self.candidates[a], &self.candidates[b]);
            ca.support
                .cmp(&cb.support)
                .then(ca.proposed_by.len().cmp(&cb.proposed_by.len()))
                .then(b.cmp(&a))
        });
        let Some(best) = best else {
            self.end_in_deadlock("the panel accepted none of the proposed cruxes".into());
            return;
        };
        if accepted.len() > 1 {
            self.notes.push(format!(
                "the panel accepted {} cruxes; crux {} was chosen by support ({} yes, proposed \
                 by {}), ties broken by proposals, then by order",
                accepted.len(),
                best + 1,
                self.candidates[best].support,
                self.candidates[best].proposed_by.len()
            ));
        }
        self.accepted = Some(best);
        self.verdict_ask = Some(Ask::new("crux/verdict"));
        self.stage = Stage::Verdict;
    }

    fn settle_verdict(&mut self, ask: &Ask, s: &Settlement) {
        let answer = match s.outcome {
            PanelOutcome::Yes => VerdictAnswer::Warranted,
            PanelOutcome::No => VerdictAnswer::NotWarranted,
            PanelOutcome::Deadlocked => {
                if let Some(next) = ask.widened() {
                    self.verdict_ask = Some(next);
                    return;
                }
                VerdictAnswer::Deadlocked
            }
        };
        self.verdict = Some(Verdict {
            answer,
            tallies: tallies(&s.rulings),
            rulings: s.rulings.clone(),
        });
        self.stage = Stage::Done;
    }

    fn end_in_deadlock(&mut self, why: String) {
        self.deadlock = Some(why);
        self.stage = Stage::Done;
    }
}

fn record_report(
    key: &str,
    r: &PanelRuling,
    m: &Materials,
    anchors: &std::collections::BTreeSet<String>,
) -> ReportRecord {
    let (report, mut findings, raw) = match gate(&r.rationale, r.yes, anchors) {
        Ok(rep) => (Some(rep), Vec::new(), None),
        Err((rep, f)) => {
            let raw = rep
                .is_none()
                .then(|| r.rationale.chars().take(2_000).collect());
            (rep, f, raw)
        }
    };
    if let Some(fam) = &r.model_family
        && m.advocate_families()
            .iter()
            .any(|a| a.eq_ignore_ascii_case(fam))
    {
        findings.push(super::checks::finding(
            "crux.gate.advocate_family",
            format!("ruling of {}", r.arbiter_id),
            format!("model family {fam} wrote a position; its report is kept but does not count"),
        ));
    }
    ReportRecord {
        key: key.into(),
        arbiter_id: r.arbiter_id.clone(),
        prior: r.prior,
        organisation: r.organisation.clone(),
        model_family: r.model_family.clone(),
        yes: r.yes,
        presented: r.presented.clone(),
        order: audit_order(r, m),
        report,
        gate: findings,
        raw,
    }
}

/// The machine records the order each arbiter was shown (from the motion's logged draw
/// seed, the key and the arbiter's public key: docs/PROCEDURES.md "Presentation order");
/// the run checks it is an order of exactly the report's items.
fn audit_order(r: &PanelRuling, m: &Materials) -> OrderAudit {
    if r.presented.is_empty() {
        return OrderAudit::NotRecorded;
    }
    let mut shown = r.presented.clone();
    shown.sort();
    let mut labels = m.report_labels();
    labels.sort();
    if shown == labels {
        OrderAudit::Recorded
    } else {
        OrderAudit::Malformed
    }
}

fn same_crux(a: &str, b: &str) -> bool {
    let sa: std::collections::BTreeSet<String> = content_stems(a).into_iter().collect();
    let sb: std::collections::BTreeSet<String> = content_stems(b).into_iter().collect();
    let common = sa.intersection(&sb).count();
    let union = sa.union(&sb).count().max(1);
    common * 100 >= union * SAME_CRUX_PERCENT
}

/// Distinct cruxes among counted reports, first-named first, each with its proposers.
fn distinct<'a>(counted: &[&'a ReportRecord]) -> Vec<(&'a CruxReport, Vec<String>)> {
    let mut out: Vec<(&CruxReport, Vec<String>)> = Vec::new();
    for r in counted {
        let Some(rep) = &r.report else { continue };
        match out
            .iter_mut()
            .find(|(c, _)| same_crux(&c.primary_crux, &rep.primary_crux))
        {
            Some((_, by)) => by.push(r.arbiter_id.clone()),
            None => out.push((rep, vec![r.arbiter_id.clone()])),
        }
    }
    out
}

/// The candidates: distinct cruxes by support (then first named), at most
/// [`MAX_CANDIDATES`].
fn propose(counted: &[&ReportRecord]) -> Vec<Candidate> {
    let mut d = distinct(counted);
    d.sort_by_key(|(_, by)| std::cmp::Reverse(by.len()));
    d.into_iter()
        .take(MAX_CANDIDATES)
        .enumerate()
        .map(|(i, (rep, by))| Candidate {
            crux: rep.primary_crux.trim().to_string(),
            why_both_depend: rep.why_both_depend.trim().to_string(),
            resolved_by: rep.resolved_by.trim().to_string(),
            proposed_by: by,
            ask: Ask::new(format!("crux/candidate/{}", i + 1)),
            status: CandidateStatus::Open,
            support: 0,
            tallies: Vec::new(),
        })
        .collect()
}
