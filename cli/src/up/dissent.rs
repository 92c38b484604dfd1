//! `panel up`'s second debate: a real disagreement the panel resolves
//! (docs/PANEL.md "Fresh panels"). Four arbiters declare stances for it; one of them, a
//! partisan judge that leans to side B, rules against a claim its own stance-mates accept,
//! so stance B splits and the merge deadlocks with the dissent on the record. Four more
//! arbiters then declare; the question goes again to a fresh panel disjoint from the first
//! (the pool is too small for the two extra seats, so it keeps the debate's size), which
//! accepts it across both stances and both organisations. The summary measures the
//! panels' independence from the record's rulings (`ErrorHistory`).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use crucible::contribution::Contribution;
use panel_machine::debates::SubmissionHints;
use panel_machine::read::query::{ArbitersReply, DebateMotionsReply, MotionsReply};
use panel_machine::reply::CreateDebateReply;
use panel_machine::rules::independence::ErrorHistory;
use panel_machine::{Acceptance, Policy, Stance};
use panel_machine::{ClientCommand, DebateSpec, PanelRequest, Query};
use panel_machine::{Motion, MotionStatus};
use serde_json::json;

use crate::output::say;
use crate::rulings::Names;
use crate::up::{Contributor, Panel};
use panel_coordinator::client::failover::decode_reply;

/// The first panel: two arbiters per stance, both organisations on each side; the
/// partisan `arb-north-p` leans to B whatever the evidence.
pub const FIRST: [(&str, Stance); 4] = [
    ("arb-north-a", Stance::A),
    ("arb-south-a", Stance::A),
    ("arb-south-b", Stance::B),
    ("arb-north-p", Stance::B),
];

/// The fresh panel, declared once the first is seated: disjoint from it.
pub const FRESH: [(&str, Stance); 4] = [
    ("arb-north-c", Stance::A),
    ("arb-south-c", Stance::A),
    ("arb-north-b", Stance::B),
    ("arb-south-d", Stance::B),
];

/// What the demo showed, for the summary.
pub struct Shown {
    pub debate_id: String,
    pub deadlocked: String,
    /// Why it deadlocked, as its motion's record says (the acceptance conditions failed).
    pub deadlock_reasons: String,
    pub accepted: String,
    /// Kish's n_eff of the panel that accepted (as the rule counts it), and of the whole
    /// pool by measured correlation alone.
    pub n_eff_panel: f64,
    pub n_eff_pool: f64,
    /// Pairs of the fresh panel judged by measured correlation, of all its pairs.
    pub pairs_measured: usize,
    pub pairs: usize,
    pub pool: usize,
    pub motions_measured: u64,
}

impl Shown {
    /// The demo's two summary lines: the deadlock the fresh panel resolved, and what its
    /// votes were worth (docs/coordinator/acceptance.md "Measured independence").
    pub fn say(&self) {
        say!(
            "  the panel earned its keep in {}: {} deadlocked ({}), the fresh panel accepted {}",
            self.debate_id,
            self.deadlocked,
            self.deadlock_reasons,
            self.accepted
        );
        say!(
            "  measured independence (Kish n_eff, from {} decided yes/no motions): the fresh panel is worth {:.2} of {} votes ({} of {} pairs measured, the rest by declared lineage; the rule needs 2); the admitted pool's measured errors make its {} arbiters worth {:.2}",
            self.motions_measured,
            self.n_eff_panel,
            FRESH.len(),
            self.pairs_measured,
            self.pairs,
            self.pool,
            self.n_eff_pool
        );
    }
}

pub async fn run(
    panel: &mut Panel,
    state: &Path,
    author: &Contributor<'_>,
    names: &Names,
) -> Result<Shown> {
    say!("\nA contested question: a fresh panel resolves a real disagreement");
    let created = panel
        .write(ClientCommand::CreateDebate(DebateSpec {
            resolution: "Resolved: the city should move its offices to a four-day week.".into(),
            pos_a: "Move to a four-day week".into(),
            pos_b: "Keep the five-day week".into(),
            burden: None,
            claim_budget: None,
            seats: 4,
            min_per_stance: 2,
            policy: Some(Policy::independent()),
            simulation: true,
            convener: "panel-up".into(),
        }))
        .await?;
    let debate_id = decode_reply::<CreateDebateReply>("the second debate", created)?.debate_id;
    crate::up::stances::declare(&mut panel.coordinators, state, &debate_id, &FIRST).await?;
    say!(
        "Debate {debate_id}: only {} declared a stance so far; arb-north-p's judge leans to B whatever the evidence",
        FIRST.map(|(id, _)| id).join(", ")
    );
    let mut printed = BTreeSet::new();
    let mut phase = String::new();
    panel
        .write(ClientCommand::AskPanel(PanelRequest {
            debate_id: debate_id.clone(),
            author: "panel-up".into(),
            question: crucible::motion::Question::AdvancePhase {
                from: "framing".into(),
            },
            expected: Some(crucible::motion::Answer::Yes),
            fresh_panel: None,
        }))
        .await?;
    crate::up::settle(panel, &debate_id, names, &mut printed, &mut phase).await?;

    let claim: Contribution = serde_json::from_value(json!({
        "op": "thread", "title": "Pilot departments", "claim": {
            "type": "logical",
            "assertion": "Departments that piloted the shorter week kept their service levels.",
            "grounds": "The pilot departments' service reports show the same response times before and during the pilot.",
            "warrant": "If service held while hours fell, the shorter week did not cost the public.",
            "evidence": [],
            "qualifier": "probable",
        },
    }))
    .context("the demo's claim")?;
    let hints = SubmissionHints {
        answer: Some(crucible::motion::Answer::Yes),
        verify: None,
        relevance: Some(1.0),
    };
    crate::up::submit(panel, &debate_id, author, "A", claim, hints).await?;
    say!(
        "  {} (side A) opens a thread: pilot departments kept their service levels",
        author.name
    );
    let first = wait_for_open_merge(panel, &debate_id).await?;
    // The first panel is seated; the wider pool arrives.
    crate::up::stances::declare(&mut panel.coordinators, state, &debate_id, &FRESH).await?;
    say!(
        "  while {first} is open, four more arbiters declare for {debate_id}: {}",
        FRESH.map(|(id, _)| id).join(", ")
    );
    crate::up::settle(panel, &debate_id, names, &mut printed, &mut phase).await?;

    let motions: DebateMotionsReply = panel
        .coordinators
        .read_as(&Query::DebateMotions {
            debate_id: debate_id.clone(),
        })
        .await?;
    let merges: Vec<&Motion> = motions
        .motions
        .iter()
        .filter(|m| m.spec.kind == panel_machine::MotionKind::Merge)
        .collect();
    let (Some(deadlocked), Some(accepted)) = (
        merges
            .iter()
            .find(|m| matches!(m.status, MotionStatus::Decided(Acceptance::Deadlocked(_)))),
        merges
            .iter()
            .find(|m| matches!(m.status, MotionStatus::Decided(Acceptance::Accepted { .. }))),
    ) else {
        bail!(
            "the contested merge in {debate_id} did not deadlock and then pass a fresh panel: {:?}",
            merges
                .iter()
                .map(|m| (&m.spec.motion_id, &m.status))
                .collect::<Vec<_>>()
        );
    };
    let sat_first: BTreeSet<&str> = deadlocked
        .seats
        .iter()
        .map(|s| s.arbiter_id.as_str())
        .collect();
    if accepted
        .seats
        .iter()
        .any(|s| sat_first.contains(s.arbiter_id.as_str()))
    {
        bail!(
            "the fresh panel of {} is not disjoint from the first",
            accepted.spec.motion_id
        );
    }

    // The pool's measured independence, rebuilt from every decided motion as a reader of
    // the record would.
    let all: MotionsReply = panel
        .coordinators
        .read_as(&Query::Motions { limit: None })
        .await?;
    let arbiters: ArbitersReply = panel.coordinators.read_as(&Query::Arbiters).await?;
    let measured =
        ErrorHistory::from_motions(&all.motions, |key| names.get(key).map(|(id, _)| id.clone()));
    // The figure apply reached the verdict with, as the record keeps it beside it.
    let figures = accepted.independence.as_ref().with_context(|| {
        format!(
            "{} carries no measured independence, though its policy asks for it",
            accepted.spec.motion_id
        )
    })?;
    let pool_ids: Vec<&str> = arbiters
        .arbiters
        .iter()
        .filter(|a| a.admitted)
        .map(|a| a.registration.arbiter_id.as_str())
        .collect();
    let deadlock_reasons = match &deadlocked.status {
        MotionStatus::Decided(Acceptance::Deadlocked(d)) => d
            .reasons
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
        _ => String::new(),
    };
    Ok(Shown {
        debate_id,
        deadlocked: deadlocked.spec.motion_id.clone(),
        deadlock_reasons,
        accepted: accepted.spec.motion_id.clone(),
        n_eff_panel: f64::from(figures.n_eff_milli) / 1000.0,
        pairs_measured: figures.pairs_measured,
        pairs: figures.pairs,
        n_eff_pool: measured.n_eff(&pool_ids),
        pool: pool_ids.len(),
        motions_measured: measured.motions,
    })
}

/// The merge motion the claim opened, once it is seated.
async fn wait_for_open_merge(panel: &Panel, debate_id: &str) -> Result<String> {
    let start = Instant::now();
    loop {
        let v: DebateMotionsReply = panel
            .coordinators
            .read_as(&Query::DebateMotions {
                debate_id: debate_id.into(),
            })
            .await?;
        if let Some(m) = v.motions.iter().find(|m| {
            m.spec.kind == panel_machine::MotionKind::Merge && m.status == MotionStatus::Open
        }) {
            return Ok(m.spec.motion_id.clone());
        }
        if start.elapsed() > Duration::from_secs(30) {
            bail!("no merge motion opened in {debate_id} within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
