//! The paper's worked verdict (section 4), built through the writers from framing to
//! verdict: A 6.36 against B 4.20 (margin 0.340, clear); after B1's source is verified
//! at T1, B 6.40 against A 6.36 (margin 0.006, unresolved).
//!
//! The paper gives the totals and B1's factors; the other rows are chosen to produce
//! them: A1 = T2 verified 4 x 1.0 x 1.1 x 0.9 = 3.96, A2 = logical 2 x 1.0 x 1.2 x 1.0
//! = 2.40, B1 = T1 claimed (3 until verified) x 1.0 x 1.1 x 1.0 = 3.30,
//! B2 = logical 2 x 0.5 x 1.0 x 0.9 = 0.90 (a repair after an upheld challenge).

use crate::challenge::ChallengeInput;
use crate::document::{Citation, Debate, Side};
use crate::env::Env;
use crate::error::Outcome;
use crate::model::{NewDebate, VersionInput};
use crate::protocol::Protocol;

/// Ids of the worked example's parts, for callers that continue the story.
#[derive(Debug, Clone)]
pub struct WorkedExample {
    pub debate: Debate,
    pub b1_thread: String,
    pub b1_version: String,
}

fn claim(
    author: &str,
    side: &str,
    kind: &str,
    assertion: &str,
    grounds: &str,
    warrant: &str,
    evidence: Vec<Citation>,
    qualifier: &str,
) -> VersionInput {
    VersionInput {
        author: Some(author.into()),
        side: Some(side.into()),
        kind: Some(kind.into()),
        assertion: Some(assertion.into()),
        grounds: Some(grounds.into()),
        warrant: Some(warrant.into()),
        evidence,
        qualifier: Some(qualifier.into()),
        ..VersionInput::default()
    }
}

fn challenge(
    thread: &str,
    version: &str,
    ground: &str,
    text: &str,
    author: &str,
    side: &str,
) -> ChallengeInput {
    ChallengeInput {
        thread_id: thread.into(),
        version_id: version.into(),
        ground: Some(ground.into()),
        text: Some(text.into()),
        evidence: Vec::new(),
        author: Some(author.into()),
        side: Some(side.into()),
    }
}

/// Builds the debate up to and including the first verdict (phase `verdict`).
pub fn build<E: Env>(p: &mut Protocol<E>) -> Outcome<WorkedExample> {
    let arb = Some("arbiter");
    let mut d = p.new_debate(NewDebate {
        resolution: "Resolved: a four-day working week at equal pay raises output per employee in office work.".into(),
        pos_a: "Affirmative: output per employee rises".into(),
        pos_b: "Negative: output per employee does not rise".into(),
        burden: Some("shared".into()),
        claim_budget: Some(3.0),
    });
    p.advance_phase(&mut d, arb)?;

    let a1 = p.create_thread(&mut d, Some("A"), Some("Trial output data"), Some("ada"))?;
    let a1v = p.add_version(&mut d, &a1, claim(
        "ada", "A", "empirical",
        "Firms in a national four-day week trial reported stable or higher output per employee.",
        "The national statistics office tabulated output per employee for participating firms before and during the trial.",
        "If output per employee held or rose while hours fell, the shorter week did not cost output.",
        vec![Citation::new("National statistics office trial tabulation", "http://127.0.0.1/a1", "T2")],
        "probable",
    ))?;
    p.verify_tier(
        &mut d,
        &a1,
        &a1v,
        0,
        Some("Retrieved the tabulation; official statistics."),
        arb,
    )?;
    p.merge_version(
        &mut d,
        &a1,
        &a1v,
        Some("First version; verified T2 official statistics."),
        arb,
    )?;

    let a2 = p.create_thread(&mut d, Some("A"), Some("Fatigue mechanism"), Some("ada"))?;
    let a2v = p.add_version(&mut d, &a2, claim(
        "ada", "A", "logical",
        "Fewer consecutive working hours reduce fatigue-related errors per hour worked.",
        "Error rates per hour rise with the length of a working day in the cited occupational literature.",
        "If errors per hour fall with shorter weeks, output per hour rises.",
        Vec::new(),
        "certain",
    ))?;
    p.merge_version(
        &mut d,
        &a2,
        &a2v,
        Some("Compliant inference; logical claim."),
        arb,
    )?;

    let b1 = p.create_thread(
        &mut d,
        Some("B"),
        Some("Meta-analysis of hours"),
        Some("bo"),
    )?;
    let b1v = p.add_version(&mut d, &b1, claim(
        "bo", "B", "empirical",
        "Reductions in scheduled hours show no pooled effect on output per employee.",
        "A systematic review pools studies of reduced scheduled hours and reports no significant change in output per employee.",
        "If the pooled effect is null, the trial gains reflect selection of volunteer firms.",
        vec![Citation::new("Systematic review of working-time reductions", "http://127.0.0.1/b1", "T1")],
        "certain",
    ))?;
    p.merge_version(
        &mut d,
        &b1,
        &b1v,
        Some("First version; claimed T1 scores at T3 until verified."),
        arb,
    )?;

    let b2 = p.create_thread(&mut d, Some("B"), Some("Coordination cost"), Some("bo"))?;
    let b2v1 = p.add_version(
        &mut d,
        &b2,
        claim(
            "bo",
            "B",
            "logical",
            "A compressed week always raises coordination costs that cancel any gain.",
            "Meetings and handovers must fit into fewer shared days.",
            "If coordination time grows, output per employee cannot rise.",
            Vec::new(),
            "probable",
        ),
    )?;
    p.merge_version(&mut d, &b2, &b2v1, Some("Compliant in form."), arb)?;
    p.advance_phase(&mut d, arb)?;

    // Challenges: four dismissed (A1 once, A2 twice, B1 once: survival) and one upheld
    // that demotes B2 v1, which B repairs.
    let c1 = p.file_challenge(
        &mut d,
        challenge(
            &a1,
            &a1v,
            "relevance",
            "Output per employee in volunteer firms does not bear on office work in general.",
            "bo",
            "B",
        ),
    )?;
    p.respond_challenge(&mut d, &c1, Some("The trial covered office firms across sectors, which is the population of the resolution."), Some("ada"), Some("A"))?;
    p.resolve_challenge(
        &mut d,
        &c1,
        "dismissed",
        Some("The trial population matches the resolution's scope."),
        arb,
    )?;
    let c2 = p.file_challenge(
        &mut d,
        challenge(
            &a2,
            &a2v,
            "warrant-failure",
            "Fatigue reduction per hour need not translate into output per employee.",
            "bo",
            "B",
        ),
    )?;
    p.resolve_challenge(
        &mut d,
        &c2,
        "dismissed",
        Some("The warrant addresses output per hour, which the claim scopes correctly."),
        arb,
    )?;
    let c3 = p.file_challenge(
        &mut d,
        challenge(
            &a2,
            &a2v,
            "relevance",
            "Error rates are a quality measure rather than an output measure.",
            "bo",
            "B",
        ),
    )?;
    p.resolve_challenge(
        &mut d,
        &c3,
        "dismissed",
        Some("Errors consume hours that would otherwise produce output."),
        arb,
    )?;
    let c4 = p.file_challenge(
        &mut d,
        challenge(
            &b1,
            &b1v,
            "warrant-failure",
            "A null pooled effect does not establish selection of volunteer firms.",
            "ada",
            "A",
        ),
    )?;
    p.resolve_challenge(&mut d, &c4, "dismissed", Some("The warrant offers selection as the reading of a null pool; the inference holds as stated."), arb)?;
    let c5 = p.file_challenge(
        &mut d,
        challenge(
            &b2,
            &b2v1,
            "warrant-failure",
            "The claim asserts an invariable cost without premises that establish it.",
            "ada",
            "A",
        ),
    )?;
    p.resolve_challenge(
        &mut d,
        &c5,
        "upheld",
        Some("The universal 'always' is not supported by the stated grounds."),
        arb,
    )?;
    let mut repair = claim(
        "bo",
        "B",
        "logical",
        "A compressed week raises coordination costs for teams that share deadlines.",
        "Meetings and handovers must fit into fewer shared days.",
        "If coordination time grows, part of any per-hour gain is absorbed.",
        Vec::new(),
        "probable",
    );
    repair.relevance = None;
    let b2v2 = p.add_version(&mut d, &b2, repair)?;
    p.merge_version(
        &mut d,
        &b2,
        &b2v2,
        Some("Repair narrows the claim to what the grounds support."),
        arb,
    )?;
    p.advance_phase(&mut d, arb)?;

    p.submit_steelman(&mut d, Side::A, Some("The affirmative holds that national trial statistics show output per employee held or rose under a shorter week, and that less fatigue raises output per hour."), Some("bo"), Some("B"))?;
    p.certify_steelman(&mut d, Side::A, Some("ada"), Some("A"))?;
    p.submit_steelman(&mut d, Side::B, Some("The negative holds that pooled evidence shows no effect on output per employee and that coordination costs absorb per-hour gains."), Some("ada"), Some("A"))?;
    p.certify_steelman(&mut d, Side::B, Some("bo"), Some("B"))?;
    p.advance_phase(&mut d, arb)?;

    p.set_relevance(&mut d, &a1, &a1v, Some(1.0))?;
    p.set_relevance(&mut d, &a2, &a2v, Some(1.0))?;
    p.set_relevance(&mut d, &b1, &b1v, Some(1.0))?;
    p.set_relevance(&mut d, &b2, &b2v2, Some(0.5))?;
    p.advance_phase(&mut d, arb)?;

    p.issue_verdict(&mut d, None, None, arb);
    Ok(WorkedExample {
        debate: d,
        b1_thread: b1,
        b1_version: b1v,
    })
}

/// Section 4's one change: an arbiter retrieves B1's source and confirms it at T1; a
/// revised verdict is issued (the first stays on the record) and the debate closes.
pub fn verify_b1_and_revise<E: Env>(p: &mut Protocol<E>, ex: &mut WorkedExample) -> Outcome {
    let arb = Some("arbiter");
    p.verify_tier(
        &mut ex.debate,
        &ex.b1_thread,
        &ex.b1_version,
        0,
        Some("Retrieved the review; methods confirm a systematic review (T1)."),
        arb,
    )?;
    p.issue_verdict(&mut ex.debate, None, None, arb);
    p.advance_phase(&mut ex.debate, arb)
}
