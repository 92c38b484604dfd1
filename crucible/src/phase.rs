//! Phases (SPEC section 6): checked advances, and a forced transition logged under a
//! distinct action.

use crate::document::{Debate, phase, status};
use crate::env::Env;
use crate::error::{Code, Outcome, Refusal};
use crate::protocol::Protocol;

fn pending_candidates<'a>(d: &'a Debate, only: impl Fn(&str) -> bool + 'a) -> usize {
    d.threads
        .iter()
        .filter(|t| only(&t.id))
        .map(|t| {
            t.versions
                .iter()
                .filter(|v| v.status == status::CANDIDATE)
                .count()
        })
        .sum()
}

pub(crate) fn pending_on<'a>(d: &'a Debate, only: impl Fn(&str) -> bool + 'a) -> usize {
    pending_candidates(d, only)
}

fn unmet(msg: String) -> Refusal {
    Refusal::new(Code::PhasePrereqUnmet, msg)
}

/// SPEC section 6: why the current phase cannot advance, or `Ok` when it can.
pub fn phase_prereq(d: &Debate) -> Outcome {
    match d.phase.as_str() {
        phase::FRAMING => {
            if d.resolution.is_empty() || d.positions.a.is_empty() || d.positions.b.is_empty() {
                return Err(unmet(
                    "set the resolution and both positions before construction opens".into(),
                ));
            }
            Ok(())
        }
        phase::CONSTRUCTION => {
            let has = |s: &str| {
                d.threads.iter().any(|t| {
                    t.side.as_deref() == Some(s)
                        && t.canonical_id.as_deref().is_some_and(|c| !c.is_empty())
                })
            };
            if !has("A") || !has("B") {
                return Err(unmet(
                    "each side needs at least one merged claim before challenges open".into(),
                ));
            }
            let n = pending_candidates(d, |_| true);
            if n > 0 {
                return Err(unmet(format!(
                    "{n} candidate version(s) still need a merge or reject decision"
                )));
            }
            Ok(())
        }
        phase::CHALLENGE => {
            let open = d
                .challenges
                .iter()
                .filter(|c| c.resolution.as_deref().is_none_or(str::is_empty))
                .count();
            if open > 0 {
                return Err(unmet(format!("{open} challenge(s) are not yet resolved")));
            }
            let n = pending_candidates(d, |_| true);
            if n > 0 {
                return Err(unmet(format!(
                    "{n} repair candidate(s) still need a merge or reject decision"
                )));
            }
            Ok(())
        }
        phase::STEELMAN => {
            if d.steelmans.a.status != "certified" || d.steelmans.b.status != "certified" {
                return Err(unmet(
                    "both restatements must be certified, by the restated side or by an arbiter"
                        .into(),
                ));
            }
            Ok(())
        }
        phase::ADJUDICATION => {
            let missing = d
                .threads
                .iter()
                .filter(|t| t.canonical_id.as_deref().is_some_and(|c| !c.is_empty()))
                .filter_map(|t| t.canonical())
                .filter(|v| v.relevance.is_none())
                .count();
            if missing > 0 {
                return Err(unmet(format!(
                    "{missing} standing claim(s) still need a relevance weight"
                )));
            }
            Ok(())
        }
        phase::VERDICT => {
            if d.verdicts.is_empty() {
                return Err(unmet("issue a verdict before closing the debate".into()));
            }
            Ok(())
        }
        phase::CLOSED => Err(Refusal::new(
            Code::PhaseTerminal,
            "the debate is closed; only an admitted appeal reopens it (SPEC section 12)",
        )),
        phase::APPEAL_REVIEW => Err(Refusal::new(
            Code::PhaseNotAdvanceable,
            "an appeal review ends by concluding the appeal, not by advancing",
        )),
        _ => Err(Refusal::new(
            Code::PhaseNotAdvanceable,
            format!("{:?} is not a phase that advances", d.phase),
        )),
    }
}

impl<E: Env> Protocol<E> {
    /// SPEC section 6: moves to the next phase only when the prerequisites hold.
    pub fn advance_phase(&mut self, d: &mut Debate, actor: Option<&str>) -> Outcome {
        phase_prereq(d)?;
        let i = phase::ORDER
            .iter()
            .position(|p| *p == d.phase)
            .filter(|i| *i + 1 < phase::ORDER.len())
            .ok_or_else(|| {
                Refusal::new(Code::PhaseNotAdvanceable, "this phase does not advance")
            })?;
        d.phase = phase::ORDER[i + 1].into();
        let next = d.phase.clone();
        self.add_log(d, actor, None, "phase-advanced", next);
        Ok(())
    }

    /// Forced close, with no prerequisite; logged as `debate-closed`, distinct from a
    /// checked advance (SPEC section 6).
    pub fn close_debate(&mut self, d: &mut Debate, actor: Option<&str>) -> Outcome {
        d.phase = phase::CLOSED.into();
        self.add_log(
            d,
            actor,
            None,
            "debate-closed",
            "closed without checking prerequisites; appeals only".to_string(),
        );
        Ok(())
    }

    /// Forced transition to any phase, for seeding fixtures or resuming partial
    /// documents; logged as `phase-forced` so a reader sees what was not checked.
    pub fn force_phase(&mut self, d: &mut Debate, to: &str, actor: Option<&str>) -> Outcome {
        if !phase::ORDER.contains(&to) && to != phase::APPEAL_REVIEW {
            return Err(Refusal::new(
                Code::PhaseNotAdvanceable,
                format!(
                    "{to:?} is not a phase; use one of {}",
                    phase::ORDER.join(", ")
                ),
            ));
        }
        let detail = format!("{} -> {to}", d.phase);
        d.phase = to.into();
        self.add_log(d, actor, None, "phase-forced", detail);
        Ok(())
    }
}
