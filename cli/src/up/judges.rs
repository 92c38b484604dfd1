//! The demo's simulated arbiters off the cluster: the exam each would sit, scored as the
//! coordinator scores it, so the tests can show that every draw of the shipped pool admits
//! them with the scores their declared noise implies (not 0), and that nothing the demo
//! writes for its arbiters names a real product's model.

#[cfg(test)]
mod tests {
    use calibration::admission::{AdmissionDecision, AdmissionPolicy, assess_with_probes};
    use calibration::bias_probes::score_probes;
    use calibration::exam::{Exam, Tier};
    use calibration::exam_draw::draw_public_with_extra;
    use calibration::exam_scoring::{Answer, AnswerValue, ArbiterScores, score_arbiter};
    use calibration::inert::InertPolicy;
    use calibration::judge_model;
    use calibration::public_pool::{ItemKind, PublicPool};
    use panel_machine::features::admission::{Asking, expected_answer, item_motion};
    use panel_machine::features::exam_sitting::{DRAW, HELD_BACK_EXTRA, embedded_pool};
    use panel_node::judge::simulated::SimulatedJudge;

    use crate::up::{ARBITERS, ArbiterSpec};

    /// One arbiter's exam on the draw `seed` picks, answered by its simulated judge from
    /// the hinted motions a simulation cluster puts, scored with the coordinator's bars.
    fn sit(spec: &ArbiterSpec, seed: u64) -> (ArbiterScores, AdmissionDecision) {
        let pool = embedded_pool().expect("the shipped pool loads");
        let public = PublicPool::of(&pool.exam);
        let asked = draw_public_with_extra(&public, seed, &DRAW, HELD_BACK_EXTRA).expect("a draw");
        let judge = SimulatedJudge::new(spec.profile()).expect("a valid profile");
        let mut answers = Vec::new();
        for (line, id) in asked.iter().enumerate() {
            let item = public.item(id).expect("a drawn item");
            let gold = &pool
                .exam
                .items
                .iter()
                .find(|i| &i.id == id)
                .expect("its gold")
                .gold;
            let m = item_motion(
                Asking {
                    motion_id: format!("exam/s1/{}/{id}", spec.id),
                    state_hash: vec![0; 32],
                    quantiles: &public.quantiles,
                    commit_deadline_ms: 0,
                    reveal_deadline_ms: 0,
                },
                item,
                Some(expected_answer(gold)),
            );
            let a = judge.answer(&m).expect("an answer");
            let value = match item.kind {
                ItemKind::Binary => AnswerValue::Probability(a.probability),
                ItemKind::Relevance => AnswerValue::Relevance(
                    panel_machine::debates::relevance_value(a.relevance.unwrap_or(0) as u8),
                ),
                ItemKind::Tier => AnswerValue::Tier(
                    Tier::parse(&format!("T{}", a.tier.unwrap_or(0))).expect("a tier"),
                ),
                ItemKind::Quantity => {
                    AnswerValue::Quantiles(a.quantiles.iter().map(|q| q.value).collect())
                }
            };
            answers.push(Answer {
                arbiter: spec.id.into(),
                item: id.clone(),
                value,
                line: line + 1,
            });
        }
        // As a sitting under rule set 14 scores it: the held-back items left out.
        let held = calibration::exam_hold_back::held_back(&pool.exam, &asked);
        let asked: Vec<String> = asked.into_iter().filter(|id| !held.contains(id)).collect();
        let asked_exam = Exam {
            items: pool
                .exam
                .items
                .iter()
                .filter(|i| asked.contains(&i.id))
                .cloned()
                .collect(),
            ..pool.exam.clone()
        };
        let refs: Vec<&Answer> = answers.iter().filter(|a| !held.contains(&a.item)).collect();
        let scores =
            score_arbiter(&asked_exam, spec.id, &refs, &InertPolicy::default()).expect("scores");
        let probes = score_probes(&pool.exam, Some(&asked), &refs).expect("probe scores");
        let decision = assess_with_probes(
            &AdmissionPolicy::with_bias_probes(),
            &scores,
            Some(&probes),
            0,
        );
        (scores, decision)
    }

    /// Draw seeds as varied as the ones fresh arbiter keys give (SplitMix64 steps).
    fn seeds(n: u64) -> impl Iterator<Item = u64> {
        (1..=n).map(|i| {
            let mut z = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z ^ (z >> 31)
        })
    }

    #[test]
    fn every_draw_admits_every_demo_arbiter_with_the_scores_its_noise_implies() {
        for spec in &ARBITERS {
            let mut briers = Vec::new();
            for seed in seeds(150) {
                let (scores, decision) = sit(spec, seed);
                assert!(
                    decision.admitted,
                    "{} refused on draw {seed}: {:?}",
                    spec.id, decision.failed
                );
                briers.push(scores.binary.expect("binary items").brier);
            }
            let mean = briers.iter().sum::<f64>() / briers.len() as f64;
            // Noisy, not the gold copied (that would score exactly 0): of the order the
            // accuracy implies, `E[(σ(2s·z) − 1)²]` with `z ~ N(s, 1)`.
            let s = spec.profile().skill();
            let steps = 20_000;
            let implied = (0..steps)
                .map(|k| {
                    let z = s + judge_model::normal_quantile((k as f64 + 0.5) / steps as f64);
                    (judge_model::p_yes(s, 1.0, z) - 1.0).powi(2)
                })
                .sum::<f64>()
                / steps as f64;
            assert!(
                mean > 0.005 && mean > 0.25 * implied && mean < 2.5 * implied,
                "{}: mean Brier {mean}, implied {implied}",
                spec.id
            );
            assert!(
                briers.iter().any(|b| *b != briers[0]),
                "{}: the score varies with the draw",
                spec.id
            );
        }
        let means: Vec<u64> = ARBITERS
            .iter()
            .map(|a| (sit(a, 7).0.binary.expect("binary").brier * 1e6) as u64)
            .collect();
        let distinct: std::collections::BTreeSet<&u64> = means.iter().collect();
        assert!(distinct.len() > 4, "arbiters score differently: {means:?}");
    }

    /// The binary items of the shipped pool the arbiter's judge gets wrong, thresholded
    /// at 0.5 as the error history counts them.
    fn pool_errors(spec: &ArbiterSpec) -> std::collections::BTreeSet<String> {
        let pool = embedded_pool().expect("the shipped pool loads");
        let public = PublicPool::of(&pool.exam);
        let judge = SimulatedJudge::new(spec.profile()).expect("a valid profile");
        pool.exam
            .items
            .iter()
            .filter_map(|item| {
                let calibration::exam::Gold::Binary(yes) = item.gold else {
                    return None;
                };
                let m = item_motion(
                    Asking {
                        motion_id: format!("exam/s1/{}/{}", spec.id, item.id),
                        state_hash: vec![0; 32],
                        quantiles: &public.quantiles,
                        commit_deadline_ms: 0,
                        reveal_deadline_ms: 0,
                    },
                    public.item(&item.id)?,
                    Some(expected_answer(&item.gold)),
                );
                let p = judge.answer(&m).ok()?.probability;
                ((p >= 0.5) != yes).then(|| item.id.clone())
            })
            .collect()
    }

    /// Exam errors feed the measured independence the acceptance rule counts: arbiters of
    /// different lineages that erred on one item would measure as correlated, and a panel
    /// of two lineages could fall below the two independent votes its declared lineages
    /// give it. The demo's seeds keep that from happening on any draw; each arbiter still
    /// errs on the pool about as often as its accuracy says.
    #[test]
    fn no_two_lineages_err_on_the_same_exam_item() {
        let errors: Vec<_> = ARBITERS.iter().map(|a| (a, pool_errors(a))).collect();
        for (a, ea) in &errors {
            assert!(!ea.is_empty(), "{} never errs on the pool", a.id);
            for (b, eb) in &errors {
                if a.model_family != b.model_family {
                    let both: Vec<_> = ea.intersection(eb).collect();
                    assert!(
                        both.is_empty(),
                        "{} and {} both err on {both:?}",
                        a.id,
                        b.id
                    );
                }
            }
        }
    }

    #[test]
    fn the_demo_names_no_real_products_model() {
        let forbidden = [
            "claude",
            "anthropic",
            "gpt",
            "openai",
            "gemini",
            "llama",
            "mistral",
            "qwen",
            "deepseek",
        ];
        for spec in &ARBITERS {
            let text = format!(
                "{} {} {}",
                crate::up::nodes::judge_section(spec),
                spec.model_family,
                spec.organisation
            )
            .to_lowercase();
            assert!(text.contains("kind = \"simulated\""), "{text}");
            for name in forbidden {
                assert!(!text.contains(name), "{}: {name} in {text}", spec.id);
            }
        }
        // The procedures' fixtures the demo runs: their advocates and texts.
        let fixtures = [
            panel_procedures::crux::eval::BASELINE.to_string(),
            serde_json::to_string(&panel_procedures::falsify::demo_start()).expect("json"),
            serde_json::to_string(&panel_procedures::falsify::demo_inputs()).expect("json"),
            serde_json::to_string(&panel_procedures::dossier::demo_start()).expect("json"),
            serde_json::to_string(&panel_procedures::dossier::demo_inputs()).expect("json"),
        ];
        for f in fixtures {
            let f = f.to_lowercase();
            for name in forbidden {
                assert!(!f.contains(name), "{name} in a demo fixture");
            }
        }
    }
}
