//! Ledger computation (SPEC section 9) on debates of 10, 1,000, 10,000 and 100,000 threads:
//! one canonical version per thread (tiers T1 to T5, a third verified, mixed types,
//! qualifiers and relevance), a superseded predecessor on every fourth thread, and one
//! challenge per two threads (most dismissed, some same-side, some open). Target: growth
//! no worse than n log n, 100,000 threads under 100 ms.
//!
//! `cargo bench -p crucible --bench ledger`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use crucible::document::{Challenge, Citation, Debate, Num, Thread, Version};
use crucible::model::NewDebate;
use crucible::scoring::{compute_ledger, summarize};
use crucible::{FixedEnv, Protocol};

/// A small deterministic generator, so every run scores the same debate.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn version(rng: &mut Lcg, tid: &str, id: String, num: u32, status: &str) -> Version {
    const TIERS: [&str; 5] = ["T1", "T2", "T3", "T4", "T5"];
    const KINDS: [&str; 4] = ["empirical", "empirical", "logical", "definitional"];
    const QUALS: [&str; 3] = ["certain", "probable", "plausible"];
    const REL: [f64; 4] = [0.25, 0.5, 0.75, 1.0];
    let cites = rng.next(4) as usize;
    Version {
        id,
        thread_id: tid.to_string(),
        num,
        parent_id: None,
        author: Some("contributor".into()),
        side: None,
        kind: Some(KINDS[rng.next(4) as usize].into()),
        assertion: Some("The measured quantity moved in the stated direction.".into()),
        grounds: None,
        warrant: None,
        evidence: (0..cites)
            .map(|_| Citation {
                tier_verified: (rng.next(3) == 0).then_some(true),
                ..Citation::new("Source", "http://127.0.0.1/s", TIERS[rng.next(5) as usize])
            })
            .collect(),
        qualifier: Some(QUALS[rng.next(3) as usize].into()),
        status: status.into(),
        relevance: Some(Num(REL[rng.next(4) as usize])),
        merge_rationale: String::new(),
        created_at: None,
    }
}

/// A debate with `n` threads, as described in the module docs.
pub fn debate(n: usize, budget: Option<f64>) -> Debate {
    let mut d = Protocol::new(FixedEnv::new(0, 1)).new_debate(NewDebate {
        resolution: "Resolved: p.".into(),
        pos_a: "A".into(),
        pos_b: "B".into(),
        burden: Some("shared".into()),
        claim_budget: budget,
    });
    let mut rng = Lcg(42);
    for i in 0..n {
        let tid = format!("thr_{i}");
        let side = if i % 2 == 0 { "A" } else { "B" };
        let mut versions = Vec::new();
        if i % 4 == 0 {
            versions.push(version(
                &mut rng,
                &tid,
                format!("ver_{i}_0"),
                1,
                "superseded",
            ));
        }
        let vid = format!("ver_{i}_1");
        versions.push(version(
            &mut rng,
            &tid,
            vid.clone(),
            versions.len() as u32 + 1,
            "merged",
        ));
        d.threads.push(Thread {
            id: tid.clone(),
            side: Some(side.into()),
            title: Some(format!("Claim {i}")),
            versions,
            canonical_id: Some(vid.clone()),
            created_at: None,
        });
        if i % 2 == 0 {
            let resolution = match rng.next(5) {
                0 => None,
                1 => Some("upheld".to_string()),
                _ => Some("dismissed".to_string()),
            };
            let challenger = if rng.next(6) == 0 {
                side
            } else if side == "A" {
                "B"
            } else {
                "A"
            };
            d.challenges.push(Challenge {
                id: format!("chl_{i}"),
                thread_id: tid,
                version_id: vid,
                ground: Some("relevance".into()),
                text: None,
                evidence: Vec::new(),
                author: None,
                side: Some(challenger.into()),
                response: None,
                resolution,
                rationale: None,
                appeal_id: None,
                created_at: None,
            });
        }
    }
    d
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("ledger");
    for n in [10usize, 1_000, 10_000, 100_000] {
        let d = debate(n, None);
        group.throughput(Throughput::Elements(n as u64));
        if n >= 100_000 {
            group.sample_size(20);
        }
        group.bench_with_input(BenchmarkId::new("compute+summarize", n), &d, |b, d| {
            b.iter(|| {
                let l = compute_ledger(black_box(d));
                black_box(summarize(&l.totals, &d.burden))
            })
        });
        let budgeted = debate(n, Some(3.0));
        group.bench_with_input(
            BenchmarkId::new("compute+summarize/budget-3", n),
            &budgeted,
            |b, d| {
                b.iter(|| {
                    let l = compute_ledger(black_box(d));
                    black_box(summarize(&l.totals, &d.burden))
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
