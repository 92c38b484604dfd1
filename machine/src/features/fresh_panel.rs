//! Fresh, larger panels for re-asks and appeals (docs/PANEL.md, "Fresh panels").
//!
//! A question asked again after a deadlock, and an appeal, must not be judged by the
//! arbiters whose panels produced what is contested: a re-ask goes to a panel disjoint
//! from every earlier panel on the same question, two seats wider per deadlock; an appeal
//! goes to a panel disjoint from every panel that resolved a challenge on the threads it
//! targets (any challenge when it targets none), two seats wider than the debate's panels
//! per appeal round. When the admitted pool could seat a panel but not a fresh one, the question
//! ends with a named outcome instead of waiting for ever: an appeal is denied ("no fresh
//! panel"; the verdict stands) and any other question is given up as after its last
//! deadlock, the reason kept in the debate's record.

use std::collections::BTreeSet;

use crucible::motion::Question;

use crate::debates::DebateRecord;

/// Seats added per deadlock of a question and per appeal round.
pub const WIDENING: usize = 2;

/// Why a question ended without a panel.
/// Why an appeal waits for a panel (rule set `APPEALS_WAIT`), and who can end the wait.
pub fn waiting_reason(debate_id: &str, contested_sitters: usize) -> String {
    format!(
        "waiting for a panel: no panel disjoint from the {contested_sitters} arbiter(s) who sat on what it contests can be drawn from the admitted pool yet; the appeal stays pending, and admitted arbiters who have not sat on this debate can serve by declaring a stance for it (`panel arbiter declare --debate {debate_id} ...`)"
    )
}

pub fn exhausted_reason(q: &Question, contested_sitters: usize) -> String {
    let what = match q {
        Question::AdmitAppeal { .. } => "the appeal is denied and the verdict stands",
        _ => "the question is given up as after its last deadlock",
    };
    format!(
        "no panel disjoint from the {contested_sitters} arbiter(s) who sat on what it contests can be drawn from the admitted pool; {what}"
    )
}

impl DebateRecord {
    /// Whether an earlier motion on `earlier` is contested by `q`: the same question
    /// asked again, or, for an appeal, the resolution of a challenge on one of its target
    /// threads (of any challenge when it targets none): the outcomes an appeal can
    /// overturn, as `recalibration` scores them.
    fn contests(&self, q: &Question, earlier: &Question) -> bool {
        if earlier.key() == q.key() {
            return true;
        }
        let Question::AdmitAppeal { appeal_id } = q else {
            return false;
        };
        let Question::ResolveChallenge { challenge_id } = earlier else {
            return false;
        };
        let targets: &[String] = self
            .debate
            .appeal(appeal_id)
            .map_or(&[], |a| a.target_thread_ids.as_slice());
        targets.is_empty()
            || self
                .debate
                .challenge(challenge_id)
                .is_some_and(|c| targets.contains(&c.thread_id))
    }

    /// Every arbiter seated on a motion `q` contests (`seats_of` gives a motion's seated
    /// arbiter ids); they may not sit on `q`'s panel. Only an appeal and a question still
    /// being asked after a deadlock contest anything: a question given up and later asked
    /// again by request (a verification with new evidence) goes to any eligible panel.
    /// Under `v2_rules` (records exported before fresh panels) nothing is contested.
    pub fn contested_sitters(
        &self,
        q: &Question,
        v2_rules: bool,
        seats_of: impl Fn(&str) -> Vec<String>,
    ) -> BTreeSet<String> {
        if v2_rules {
            return BTreeSet::new();
        }
        let key = q.key();
        let re_ask =
            self.deadlocks.get(&key).is_some_and(|n| *n > 0) && !self.settled.contains(&key);
        if !re_ask && !matches!(q, Question::AdmitAppeal { .. }) {
            return BTreeSet::new();
        }
        self.sat_on(q, seats_of)
    }

    /// Every arbiter seated on a motion `q` contests, whether or not `q` is being asked
    /// again: the question's own earlier asks and, for an appeal, what it contests. A
    /// final panel keeps them all off (`apply/final_panel.rs`).
    pub fn sat_on(&self, q: &Question, seats_of: impl Fn(&str) -> Vec<String>) -> BTreeSet<String> {
        self.questions
            .iter()
            .filter(|(_, earlier)| self.contests(q, earlier))
            .flat_map(|(motion_id, _)| seats_of(motion_id))
            .collect()
    }

    /// The panel size for `q`: the debate's, wider by [`WIDENING`] per earlier deadlock
    /// of the question, and for an appeal per appeal round (the first appeal is round 1).
    /// Under `v2_rules` an appeal is not widened.
    pub fn seats_for(&self, q: &Question, v2_rules: bool) -> usize {
        let deadlocks = self.deadlocks.get(&q.key()).copied().unwrap_or(0) as usize;
        let round = match q {
            Question::AdmitAppeal { .. } if !v2_rules => self.appeal_round(q),
            _ => 0,
        };
        self.seats + WIDENING * (deadlocks + round)
    }

    /// The sizes to try for `q`'s panel, largest first: from rule set
    /// [`DOUBLING_APPEALS`](crate::rules::DOUBLING_APPEALS) an appeal's round r asks
    /// 2·s(r−1)+1 seats (s(0) the debate's N), then [`Self::seats_for`]'s N+2r; every
    /// other question [`Self::seats_for`] alone. The caller falls back to N last.
    pub fn seat_ladder(&self, q: &Question, rules: u32, v2_rules: bool) -> Vec<usize> {
        let widened = self.seats_for(q, v2_rules);
        let doubling = rules >= crate::rules::DOUBLING_APPEALS
            && !v2_rules
            && matches!(q, Question::AdmitAppeal { .. });
        if !doubling {
            return vec![widened];
        }
        let doubled = (0..self.appeal_round(q)).fold(self.seats, |s, _| 2 * s + 1);
        let mut sizes = vec![doubled, widened];
        sizes.dedup();
        sizes
    }

    /// An appeal's round on its debate: 1 plus the appeals asked before it.
    fn appeal_round(&self, q: &Question) -> usize {
        let earlier: BTreeSet<String> = self
            .questions
            .values()
            .filter(|e| matches!(e, Question::AdmitAppeal { .. }) && e.key() != q.key())
            .map(Question::key)
            .collect();
        earlier.len() + 1
    }
}
