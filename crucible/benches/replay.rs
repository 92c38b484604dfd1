//! Replay of a full debate: the paper's worked example from framing through both
//! verdicts (every writer, spec mode), and the same debate as a `panel replay` script
//! in reference mode.
//!
//! `cargo bench -p crucible --bench replay`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use crucible::{FixedEnv, Protocol, example};
use serde_json::json;

fn script() -> serde_json::Value {
    let mut steps = vec![
        json!({"op": "newDebate", "args": {"resolution": "Resolved: p.", "posA": "yes", "posB": "no", "claimBudget": 3}}),
        json!({"op": "advancePhase", "args": {"actor": "arbiter"}}),
    ];
    for (i, side) in ["A", "A", "B", "B"].iter().enumerate() {
        let n = i + 1;
        steps.push(json!({"op": "createThread", "args": {"side": side, "title": format!("Claim {n}"), "actor": "c"}}));
        steps.push(json!({"op": "addVersion", "args": {"threadId": format!("thr_{n}"), "side": side, "type": "empirical",
            "assertion": "The measured quantity moved.", "qualifier": "probable",
            "evidence": [{"source": "S", "url": "http://127.0.0.1/", "tier": "T2"}]}}));
        steps.push(json!({"op": "verifyTier", "args": {"threadId": format!("thr_{n}"), "versionId": format!("ver_{n}"), "citationIndex": 0, "note": "retrieved"}}));
        steps.push(json!({"op": "mergeVersion", "args": {"threadId": format!("thr_{n}"), "versionId": format!("ver_{n}"), "rationale": "first"}}));
    }
    steps.push(json!({"op": "advancePhase"}));
    steps.push(json!({"op": "fileChallenge", "args": {"threadId": "thr_1", "versionId": "ver_1", "side": "B", "ground": "relevance", "text": "t"}}));
    steps.push(json!({"op": "resolveChallenge", "args": {"challengeId": "chl_1", "resolution": "dismissed", "rationale": "holds"}}));
    steps.push(json!({"op": "advancePhase"}));
    for (of, by) in [("A", "B"), ("B", "A")] {
        steps.push(json!({"op": "submitSteelman", "args": {"ofSide": of, "text": "restatement", "author": "x", "side": by}}));
        steps.push(
            json!({"op": "certifySteelman", "args": {"ofSide": of, "actor": "y", "side": of}}),
        );
    }
    steps.push(json!({"op": "advancePhase"}));
    for n in 1..=4 {
        steps.push(json!({"op": "setRelevance", "args": {"threadId": format!("thr_{n}"), "versionId": format!("ver_{n}"), "relevance": 1.0}}));
    }
    steps.push(json!({"op": "advancePhase"}));
    steps.push(json!({"op": "issueVerdict", "args": {"actor": "arbiter"}}));
    steps.push(json!({"op": "advancePhase"}));
    json!({"env": {"clock": {"start": 1_767_225_600_000_i64, "step": 1000}, "ids": "counter-per-prefix"}, "steps": steps})
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("replay");
    group.bench_function("worked-example/writers", |b| {
        b.iter(|| {
            let mut p = Protocol::new(FixedEnv::new(1_767_225_600_000, 1000));
            let mut ex = example::build(&mut p).expect("worked example");
            example::verify_b1_and_revise(&mut p, &mut ex).expect("revision");
            black_box(ex.debate)
        })
    });
    let s = script();
    group.bench_function("script/reference-mode", |b| {
        b.iter(|| black_box(crucible::replay::run(black_box(&s)).expect("script runs")))
    });
    group.bench_function("worked-example/writers+to_json", |b| {
        b.iter(|| {
            let mut p = Protocol::new(FixedEnv::new(1_767_225_600_000, 1000));
            let mut ex = example::build(&mut p).expect("worked example");
            example::verify_b1_and_revise(&mut p, &mut ex).expect("revision");
            black_box(ex.debate.to_json().to_string())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
