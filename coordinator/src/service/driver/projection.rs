//! What a node is shown of a motion: the question's content projected into the wire
//! `ContentProjection` (docs/WIRE.md "Motion, layout v1").

use super::*;

pub(super) fn wire_side(side: Option<crucible::Side>) -> i32 {
    match side {
        Some(crucible::Side::A) => pb::Side::A as i32,
        Some(crucible::Side::B) => pb::Side::B as i32,
        None => pb::Side::None as i32,
    }
}

pub(super) fn tier_number(tier: &str) -> u32 {
    tier.strip_prefix('T')
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The projection as the wire carries it.
pub fn wire_projection(
    p: &Projection,
    kind: MotionKind,
    expected: Option<Answer>,
) -> pb::ContentProjection {
    let items = p
        .items
        .iter()
        .map(|i| pb::ProjectionItem {
            label: i.label.clone(),
            text: i.text.clone(),
            side: wire_side(i.side),
            citations: i
                .citations
                .iter()
                .map(|c| pb::Citation {
                    source: c.source.clone(),
                    url: c.url.clone(),
                    claimed_tier: tier_number(&c.tier),
                    quote: String::new(),
                })
                .collect(),
        })
        .collect();
    let expected = expected.map(|a| {
        let (yes, no) = panel_proto::ruling_check::binary_pair(wire_kind(kind))
            .unwrap_or((pb::Decision::Accept, pb::Decision::Reject));
        match a {
            Answer::Yes => pb::ExpectedAnswer {
                decision: yes as i32,
                ..Default::default()
            },
            Answer::No => pb::ExpectedAnswer {
                decision: no as i32,
                ..Default::default()
            },
            Answer::Relevance(r) => pb::ExpectedAnswer {
                decision: pb::Decision::None as i32,
                relevance: Some(panel_machine::debates::relevance_step(r) as u32),
                ..Default::default()
            },
        }
    });
    pb::ContentProjection {
        question: p.question.clone(),
        affirmative_favours: wire_side(affirmative_favours(p, kind)),
        items,
        resolution: p.resolution.clone(),
        expected,
        ..Default::default()
    }
}

/// The side a yes helps (docs/WIRE.md "Motion, layout v1", `affirmative_favours`):
/// merging or verifying a claim helps the claim's side, upholding a challenge helps the
/// challenger's; other questions help neither. A judge that leans to a side, or a reader
/// checking for bias, needs to know which way a yes cuts.
pub(super) fn affirmative_favours(p: &Projection, kind: MotionKind) -> Option<crucible::Side> {
    match kind {
        MotionKind::Merge | MotionKind::TierVerification => p.items.iter().find_map(|i| i.side),
        MotionKind::Challenge => p
            .items
            .iter()
            .find(|i| i.label.starts_with("Challenge"))
            .and_then(|i| i.side),
        _ => None,
    }
}

/// A procedure motion's question on the wire: the run, the key, the answer shape, the
/// presentation seed (the logged draw seed, docs/PROCEDURES.md "Presentation order") and,
/// in simulation runs, the scripted answer.
pub(super) fn procedure_projection(p: &mut pb::ContentProjection, q: &RunMotion, draw_seed: u64) {
    p.procedure = Some(pb::ProcedureQuestion {
        run_id: q.run_id.clone(),
        key: q.key.clone(),
        answer_shape: match q.shape {
            AnswerShape::YesNo => 0,
            AnswerShape::CruxReport => 1,
        },
        shuffle_items: q.shuffle_items,
        presentation_seed: draw_seed,
        expected_rationale: q
            .expected
            .as_ref()
            .map(|e| e.rationale.clone())
            .unwrap_or_default(),
    });
    if let Some(e) = &q.expected {
        let decision = if e.yes {
            pb::Decision::Accept
        } else {
            pb::Decision::Reject
        };
        p.expected = Some(pb::ExpectedAnswer {
            decision: decision as i32,
            ..Default::default()
        });
    }
}
