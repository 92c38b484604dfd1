//! Merge review (SPEC section 10): merge on strictly greater merit, reject, verify a
//! citation's tier, and assign relevance.

use crate::document::{Debate, Num, status};
use crate::env::Env;
use crate::error::{Code, Outcome, Refusal};
use crate::protocol::{Protocol, require_rationale};
use crate::scoring::version_merit;

/// SPEC section 9, R: the relevance weights an arbiter may assign.
pub const RELEVANCE_STEPS: [f64; 4] = [0.25, 0.5, 0.75, 1.0];

pub(crate) fn relevance_refusal(r: f64) -> Refusal {
    Refusal::new(
        Code::RelevanceInvalid,
        format!(
            "relevance {r} is not a step of the rubric; use one of 0.25, 0.5, 0.75, 1.0 (SPEC section 9)"
        ),
    )
}

fn thread_index(d: &Debate, thread_id: &str) -> Outcome<usize> {
    d.threads
        .iter()
        .position(|t| t.id == thread_id)
        .ok_or_else(|| {
            Refusal::new(
                Code::ThreadNotFound,
                format!("no thread {thread_id:?} in this debate; use an existing thread id"),
            )
        })
}

impl<E: Env> Protocol<E> {
    /// SPEC section 10: a candidate merges only when its merit strictly exceeds the
    /// incumbent's; the incumbent is superseded and a blank relevance is inherited
    /// after the comparison.
    pub fn merge_version(
        &mut self,
        d: &mut Debate,
        thread_id: &str,
        version_id: &str,
        rationale: Option<&str>,
        actor: Option<&str>,
    ) -> Outcome {
        let ti = thread_index(d, thread_id)?;
        let t = &d.threads[ti];
        let Some(cand) = t
            .version(version_id)
            .filter(|v| v.status == status::CANDIDATE)
        else {
            return Err(Refusal::new(
                Code::MergeNotCandidate,
                "only a candidate version can be merged; propose a new version instead",
            ));
        };
        if self.spec() {
            require_rationale(rationale, "a merge")?;
        }
        let incumbent = t.canonical().map(|v| v.id.clone());
        let mut superseded_num = None;
        if let Some(inc_id) = &incumbent {
            let inc = t
                .version(inc_id)
                .expect("canonical() returned this version");
            let cm = version_merit(d, cand).merit;
            let im = version_merit(d, inc).merit;
            if cm <= im {
                return Err(Refusal::new(
                    Code::MergeNotOnMerit,
                    format!(
                        "candidate merit {} does not exceed the incumbent's {}; merge on merit means strictly greater (verify a stronger source first, SPEC section 10)",
                        crate::verdict::js_to_fixed(cm, 2),
                        crate::verdict::js_to_fixed(im, 2)
                    ),
                ));
            }
        }
        let t = &mut d.threads[ti];
        if let Some(inc_id) = &incumbent {
            let inc_rel = {
                let inc = t.version_mut(inc_id).expect("incumbent exists");
                inc.status = status::SUPERSEDED.into();
                superseded_num = Some(inc.num);
                inc.relevance
            };
            let cand = t.version_mut(version_id).expect("candidate exists");
            if cand.relevance.is_none() && inc_rel.is_some() {
                cand.relevance = inc_rel;
            }
        }
        let cand = t.version_mut(version_id).expect("candidate exists");
        cand.status = status::MERGED.into();
        cand.merge_rationale = rationale.unwrap_or("").to_string();
        let num = cand.num;
        t.canonical_id = Some(version_id.to_string());
        let mut detail = format!("{} v{}", t.title.as_deref().unwrap_or("undefined"), num);
        if let Some(k) = superseded_num {
            detail.push_str(&format!(" supersedes v{k}"));
        }
        self.add_log(d, actor, None, "version-merged", detail);
        Ok(())
    }

    /// Declines a candidate; it stays in history with its rationale.
    pub fn reject_version(
        &mut self,
        d: &mut Debate,
        thread_id: &str,
        version_id: &str,
        rationale: Option<&str>,
        actor: Option<&str>,
    ) -> Outcome {
        let ti = thread_index(d, thread_id)?;
        let t = &mut d.threads[ti];
        let Some(v) = t
            .versions
            .iter_mut()
            .find(|v| v.id == version_id && v.status == status::CANDIDATE)
        else {
            return Err(Refusal::new(
                Code::RejectNotCandidate,
                "only a candidate version can be rejected",
            ));
        };
        if self.mode == crate::protocol::Conformance::Spec {
            require_rationale(rationale, "a rejection")?;
        }
        v.status = status::REJECTED.into();
        v.merge_rationale = rationale.unwrap_or("").to_string();
        let detail = format!("{} v{}", t.title.as_deref().unwrap_or("undefined"), v.num);
        self.add_log(d, actor, None, "version-rejected", detail);
        Ok(())
    }

    /// SPEC section 5: records that an arbiter retrieved the source and confirmed its
    /// tier. Works on any version status, so verifying after merge changes a canonical
    /// merit (verify-then-merge is the intended order).
    pub fn verify_tier(
        &mut self,
        d: &mut Debate,
        thread_id: &str,
        version_id: &str,
        citation_index: i64,
        note: Option<&str>,
        actor: Option<&str>,
    ) -> Outcome {
        let ti = thread_index(d, thread_id)?;
        let t = &mut d.threads[ti];
        let title = t.title.clone().unwrap_or_else(|| "undefined".into());
        let Some(v) = t.version_mut(version_id) else {
            return Err(Refusal::new(
                Code::VersionNotFound,
                "no such version in this thread; check the thread and version ids",
            ));
        };
        let num = v.num;
        let Some(c) = usize::try_from(citation_index)
            .ok()
            .and_then(|i| v.evidence.get_mut(i))
        else {
            return Err(Refusal::new(
                Code::CitationNotFound,
                format!(
                    "no citation at index {citation_index}; the version has {} (indices start at 0)",
                    v.evidence.len()
                ),
            ));
        };
        c.tier_verified = Some(true);
        c.tier_verified_note = Some(note.unwrap_or("").to_string());
        let tier = c.tier.clone().unwrap_or_else(|| "undefined".into());
        self.add_log(
            d,
            actor,
            None,
            "tier-verified",
            format!(
                "{title} v{num} citation {} confirmed at {tier}",
                citation_index + 1
            ),
        );
        Ok(())
    }

    /// SPEC section 9, R: the arbiter's relevance weight for a version. The reference
    /// has no writer for this (the host sets the field); this one takes no clock tick
    /// and writes no log entry, so replays stay aligned with the reference.
    pub fn set_relevance(
        &mut self,
        d: &mut Debate,
        thread_id: &str,
        version_id: &str,
        relevance: Option<f64>,
    ) -> Outcome {
        if self.spec()
            && let Some(r) = relevance
            && !RELEVANCE_STEPS.contains(&r)
        {
            return Err(relevance_refusal(r));
        }
        let ti = thread_index(d, thread_id)?;
        let Some(v) = d.threads[ti].version_mut(version_id) else {
            return Err(Refusal::new(
                Code::VersionNotFound,
                "no such version in this thread; check the thread and version ids",
            ));
        };
        v.relevance = relevance.map(Num);
        Ok(())
    }
}
