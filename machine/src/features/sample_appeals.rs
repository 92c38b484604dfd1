//! Random-sample appeals (rule set [`SAMPLE_APPEALS`](crate::rules::SAMPLE_APPEALS);
//! docs/PANEL.md "Random-sample appeals").
//!
//! Under a policy that seats by declared stances, a debate's panels come from the
//! arbiters who chose to declare for it: a coalition that declares while others do not
//! selects itself, and a fresh appeal panel drawn from the same declarations can be the
//! same coalition again. An appellant may instead ask that its appeal be put to a panel
//! drawn at random from the whole admitted population, each arbiter under its registered
//! (or fitted) stance, whatever it declared: where that sample admits the appeal under the
//! debate's acceptance rule, its outcome stands, as any appeal's does. Those who sat on
//! what the appeal contests stay off, as on every appeal panel (`fresh_panel`).

use crucible::contribution::Contribution;
use crucible::motion::Question;

use crate::command::ContributionSubmission;
use crate::debates::DebateRecord;
use crate::rules::acceptance::Policy;

/// Why a random-sample request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SampleAppealError {
    #[error(
        "random_sample is set on a {op} contribution: only an appeal is put to a random \
         sample; send the contribution without it"
    )]
    NotAnAppeal { op: String },
    #[error(
        "random-sample appeals start at rule set 22 and this group applies rule set {rules}; \
         file the appeal without --random-sample"
    )]
    NotInForce { rules: u32 },
}

/// Checks a write's random-sample request against the rule set in force.
pub fn check(sub: &ContributionSubmission, rules: u32) -> Result<(), SampleAppealError> {
    if !sub.random_sample {
        return Ok(());
    }
    if rules < crate::rules::SAMPLE_APPEALS {
        return Err(SampleAppealError::NotInForce { rules });
    }
    if !matches!(sub.contribution, Contribution::Appeal { .. }) {
        return Err(SampleAppealError::NotAnAppeal {
            op: sub.contribution.op().to_owned(),
        });
    }
    Ok(())
}

/// The policy `question`'s panel is drawn under: the debate's, except that a random-sample
/// appeal seats from the whole admitted population (no declared stances).
pub fn drawing_policy(rec: &DebateRecord, question: &Question) -> Policy {
    let mut policy = rec.policy.clone();
    if is_sampled(rec, question) {
        policy.independence.declared_stances = false;
    }
    policy
}

/// Whether `question` is a random-sample appeal's admission.
pub fn is_sampled(rec: &DebateRecord, question: &Question) -> bool {
    matches!(question, Question::AdmitAppeal { appeal_id } if rec.sample_appeals.contains(appeal_id))
}
