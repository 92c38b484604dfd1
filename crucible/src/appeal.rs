//! Appeals (SPEC section 12): one per side (a denial does not consume it), scoped
//! reopening, and a revised verdict linked to the appeal.

use crate::document::{Appeal, Citation, Debate, Num, Side, phase};
use crate::env::Env;
use crate::error::{Code, Outcome, Refusal};
use crate::phase::pending_on;
use crate::protocol::{Protocol, require_rationale, utf16_prefix};

/// Appeal grounds (SPEC section 12).
pub const GROUNDS: [&str; 3] = ["A1", "A2", "A3"];

/// Input of [`Protocol::file_appeal`].
#[derive(Debug, Clone, Default)]
pub struct AppealInput {
    pub side: Option<String>,
    pub author: Option<String>,
    pub ground: Option<String>,
    pub justification: Option<String>,
    pub evidence: Vec<Citation>,
    pub target_thread_ids: Vec<String>,
}

/// SPEC section 12: may `side` appeal now? Closed, with a verdict, and no live or
/// spent appeal of its own (denied appeals do not count).
pub fn can_appeal(d: &Debate, side: &str) -> Outcome {
    if d.phase != phase::CLOSED {
        return Err(Refusal::new(
            Code::AppealNotClosed,
            "appeals apply only to a closed debate",
        ));
    }
    if d.verdicts.is_empty() {
        return Err(Refusal::new(
            Code::AppealNoVerdict,
            "there is no verdict to appeal yet",
        ));
    }
    if d.appeals
        .iter()
        .any(|a| a.side.as_deref() == Some(side) && a.status != "denied")
    {
        return Err(Refusal::new(
            Code::AppealLimitReached,
            format!("side {side} has already used its one appeal"),
        ));
    }
    Ok(())
}

fn appeal_index(d: &Debate, id: &str) -> Outcome<usize> {
    d.appeals.iter().position(|a| a.id == id).ok_or_else(|| {
        Refusal::new(
            Code::AppealNotFound,
            format!("no appeal {id:?} in this debate; use an existing appeal id"),
        )
    })
}

impl<E: Env> Protocol<E> {
    /// Files an appeal. Spec mode checks [`can_appeal`] first (the reference leaves
    /// that to the host).
    pub fn file_appeal(&mut self, d: &mut Debate, input: AppealInput) -> Outcome<String> {
        if self.spec() {
            let side = input.side.as_deref().unwrap_or("");
            if Side::parse(side).is_none() {
                return Err(Refusal::new(
                    Code::SideInvalid,
                    "an appeal declares side \"A\" or \"B\"",
                ));
            }
            can_appeal(d, side)?;
        }
        let id = self.env.new_id("app");
        let filed = self.env.now();
        let a = Appeal {
            id: id.clone(),
            side: input.side,
            author: input.author,
            ground: input.ground,
            justification: input.justification,
            evidence: input.evidence,
            target_thread_ids: input.target_thread_ids,
            status: "filed".into(),
            decision_rationale: Some(String::new()),
            filed_at: Some(Num(filed as f64)),
        };
        let (author, side, ground) = (a.author.clone(), a.side.clone(), a.ground.clone());
        d.appeals.push(a);
        self.add_log(
            d,
            author.as_deref(),
            side.as_deref(),
            "appeal-filed",
            ground,
        );
        Ok(id)
    }

    /// Admits or denies a filed appeal. Admission enters `appeal-review` scoped to a copy
    /// of the named threads.
    pub fn decide_appeal(
        &mut self,
        d: &mut Debate,
        appeal_id: &str,
        admit: bool,
        rationale: Option<&str>,
        actor: Option<&str>,
    ) -> Outcome {
        let ai = appeal_index(d, appeal_id)?;
        if d.appeals[ai].status != "filed" {
            return Err(Refusal::new(
                Code::AppealAlreadyDecided,
                "this appeal has already been decided",
            ));
        }
        if self.spec() {
            require_rationale(rationale, "an appeal decision")?;
            if admit && d.phase != phase::CLOSED {
                return Err(Refusal::new(
                    Code::AppealNotClosed,
                    "an appeal is admitted only on a closed debate",
                ));
            }
        }
        let a = &mut d.appeals[ai];
        a.status = if admit { "admitted" } else { "denied" }.into();
        a.decision_rationale = rationale.map(str::to_string);
        let targets = a.target_thread_ids.clone();
        let detail = utf16_prefix(rationale.unwrap_or("undefined"), 80).to_string();
        self.add_log(
            d,
            actor,
            None,
            if admit {
                "appeal-admitted"
            } else {
                "appeal-denied"
            },
            detail,
        );
        if admit {
            d.phase = phase::APPEAL_REVIEW.into();
            d.appeal_targets = targets;
            d.active_appeal_id = Some(appeal_id.to_string());
        }
        Ok(())
    }

    /// Concludes the review: issues the revised verdict linked to the appeal, resolves
    /// the appeal and closes the debate again. Blocked by this cycle's open challenges
    /// and by candidates on the reopened threads only.
    pub fn conclude_appeal_review(
        &mut self,
        d: &mut Debate,
        actor: Option<&str>,
        rationale: Option<&str>,
    ) -> Outcome<u32> {
        let appeal_id = review_prereq(d)?;
        let n = self.issue_verdict(d, Some(&appeal_id), rationale, actor);
        if let Some(a) = d.appeals.iter_mut().find(|a| a.id == appeal_id) {
            a.status = "resolved".into();
        }
        d.phase = phase::CLOSED.into();
        d.appeal_targets.clear();
        d.active_appeal_id = None;
        self.add_log(
            d,
            actor,
            None,
            "appeal-resolved",
            "revised verdict issued; the debate is closed again".to_string(),
        );
        Ok(n)
    }
}

/// SPEC section 12: may the appeal review in progress conclude now? The active appeal's
/// id when it may; the refusal naming what blocks it otherwise (no review in progress,
/// this cycle's unresolved challenges, candidates on the reopened threads).
pub fn review_prereq(d: &Debate) -> Result<String, Refusal> {
    let active = d.active_appeal_id.clone().filter(|a| !a.is_empty());
    let Some(appeal_id) = active.filter(|_| d.phase == phase::APPEAL_REVIEW) else {
        return Err(Refusal::new(
            Code::AppealNotInReview,
            "no appeal review is in progress",
        ));
    };
    let open = d
        .challenges
        .iter()
        .filter(|c| {
            c.appeal_id.as_deref() == Some(appeal_id.as_str())
                && c.resolution.as_deref().is_none_or(str::is_empty)
        })
        .count();
    if open > 0 {
        return Err(Refusal::new(
            Code::AppealOpenChallenges,
            format!("{open} challenge(s) filed in this review are unresolved; resolve them first"),
        ));
    }
    let targets = d.appeal_targets.clone();
    let pending = pending_on(d, |id| targets.iter().any(|t| t == id));
    if pending > 0 {
        return Err(Refusal::new(
            Code::AppealPendingCandidates,
            format!("{pending} candidate(s) on reopened threads need a merge or reject decision"),
        ));
    }
    Ok(appeal_id)
}
