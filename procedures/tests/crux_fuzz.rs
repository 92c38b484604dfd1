//! Untrusted bytes never panic the crux edge: decoding, the checks, the start, and
//! settlements carrying arbitrary rationales.

use panel_procedures::crux::{self, CruxRun, eval};
use panel_procedures::{PanelOutcome, PanelRuling, Prior, Procedure, Settlement, StartContext};
use proptest::prelude::*;

fn ctx() -> StartContext {
    StartContext {
        run_id: "fuzz".into(),
        seed: 1,
        simulation: true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok(s) = crux::decode_start(&bytes) {
            let _ = CruxRun::start(s, &ctx());
        }
    }

    #[test]
    fn edited_baselines_never_panic(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut bytes = eval::BASELINE.as_bytes().to_vec();
        for (at, b) in edits {
            let i = at % bytes.len();
            bytes[i] = b;
        }
        if let Ok(s) = crux::decode_start(&bytes) {
            let _ = CruxRun::start(s, &ctx());
        }
    }

    #[test]
    fn arbitrary_rationales_never_panic(texts in proptest::collection::vec(".{0,300}", 1..6)) {
        let s = crux::decode_start(eval::BASELINE.as_bytes()).unwrap();
        let mut run = CruxRun::start(s, &ctx()).unwrap();
        let q = run.pending().remove(0);
        let rulings = texts.iter().enumerate().map(|(i, t)| PanelRuling {
            arbiter_id: format!("a{i}"),
            prior: Prior::None,
            organisation: "o".into(),
            model_family: None,
            yes: Some(i % 2 == 0),
            probability_milli: 500,
            rationale: t.clone(),
            presented: vec![t.clone()],
        }).collect();
        let settlement = Settlement { key: q.key, motion_id: "m".into(), outcome: PanelOutcome::Yes, rulings };
        prop_assert!(run.settle(&settlement).is_ok());
        let _ = run.render_markdown();
    }
}
