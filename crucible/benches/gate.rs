//! Gate throughput over a realistic corpus of debate submissions
//! (crucible/corpus/bench.jsonl: claims, challenges, responses and steelmans, about one
//! in eight texts with a violation, some non-ASCII punctuation). Reported as fields per
//! second; compare with the reference engine on the same file (docs/GATE.md,
//! BENCHMARKS.md).
//!
//! `cargo bench -p crucible --bench gate`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use crucible::gate::{self, GateMode, GateRequest};

const CORPUS: &str = include_str!("../corpus/bench.jsonl");

fn corpus() -> Vec<GateRequest> {
    CORPUS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| GateRequest::from_json(l).expect("bench corpus line is a valid request"))
        .collect()
}

fn bench(c: &mut Criterion) {
    let requests = corpus();
    let fields: usize = requests.iter().map(|r| r.fields.len()).sum();
    let mut group = c.benchmark_group("gate");
    group.throughput(Throughput::Elements(fields as u64));
    for (name, mode) in [
        ("corpus/acronym-mode", GateMode::Acronyms),
        ("corpus/reference-mode", GateMode::Reference),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut n = 0;
                for r in &requests {
                    n += gate::check_with_mode(black_box(&r.fields), black_box(&r.ctx), mode).len();
                }
                n
            })
        });
    }
    group.finish();

    // One clean three-field claim: the common case on a live panel.
    let clean = requests
        .iter()
        .find(|r| r.fields.len() == 3 && gate::check(&r.fields, &r.ctx).is_empty())
        .expect("the corpus has a clean claim");
    let mut single = c.benchmark_group("gate-single");
    single.throughput(Throughput::Elements(3));
    single.bench_function("clean-claim", |b| {
        b.iter(|| gate::check(black_box(&clean.fields), black_box(&clean.ctx)))
    });
    single.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
