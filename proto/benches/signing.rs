//! Signed-ruling envelope vs raw ed25519-dalek, same machine, same run.
//!
//! "raw" signs/verifies the ruling's canonical bytes directly with ed25519-dalek (bytes
//! prepared outside the timed loop); "envelope" is what a coordinator or node actually
//! does per ruling: shape checks, canonical bytes (with the SHA-256 rationale digest),
//! then the same ed25519 operation. The difference is the envelope's cost.
//!
//! Run: `cargo bench -p panel-proto --bench signing`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use panel_proto::pb::{Decision, MotionKind, Ruling, SignedRuling};
use panel_proto::signing::{self, ruling_canonical_bytes};
use panel_proto::{VerifiedMemo, sign_ruling, verify_ruling, verify_rulings_batch};

/// A memo for one verification: a shared one would answer every round after the first
/// from its remembered successes, and the bench would time a hash lookup, not a
/// verification.
fn fresh() -> VerifiedMemo {
    VerifiedMemo::default()
}

fn key(i: u32) -> SigningKey {
    let mut seed = [7u8; 32];
    seed[..4].copy_from_slice(&i.to_be_bytes());
    SigningKey::from_bytes(&seed)
}

fn ruling(i: u32, key: &SigningKey) -> Ruling {
    Ruling {
        motion_id: format!("motion-{i:08}"),
        debate_id: "debate-remote-work-2026".into(),
        kind: MotionKind::Merge as i32,
        state_hash: vec![i as u8; 32],
        decision: Decision::Accept as i32,
        probability: 0.83,
        relevance: None,
        tier: None,
        quantiles: vec![],
        receipt: None,
        rationale: "The candidate replaces an unverified T4 blog citation with a verified T2 \
                    peer-reviewed study and narrows the claim from 'always' to 'in most \
                    surveyed firms', which the study supports."
            .into(),
        arbiter_key: key.verifying_key().to_bytes().to_vec(),
        issued_at_unix_ms: 1_790_000_000_000 + i64::from(i),
        motion_digest: Vec::new(),
        provenance: None,
    }
}

struct Fixture {
    keys: Vec<SigningKey>,
    vks: Vec<VerifyingKey>,
    rulings: Vec<Ruling>,
    signed: Vec<SignedRuling>,
    canon: Vec<Vec<u8>>,
    sigs: Vec<ed25519_dalek::Signature>,
}

fn fixture(n: u32) -> Fixture {
    let keys: Vec<SigningKey> = (0..n).map(key).collect();
    let vks = keys.iter().map(|k| k.verifying_key()).collect();
    let rulings: Vec<Ruling> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| ruling(i as u32, k))
        .collect();
    let signed: Vec<SignedRuling> = keys
        .iter()
        .zip(&rulings)
        .map(|(k, r)| sign_ruling(k, r.clone()).unwrap())
        .collect();
    let canon: Vec<Vec<u8>> = rulings
        .iter()
        .map(|r| ruling_canonical_bytes(r).unwrap())
        .collect();
    let sigs = keys.iter().zip(&canon).map(|(k, c)| k.sign(c)).collect();
    Fixture {
        keys,
        vks,
        rulings,
        signed,
        canon,
        sigs,
    }
}

fn bench(c: &mut Criterion) {
    let f = fixture(64);
    eprintln!("canonical ruling size: {} bytes", f.canon[0].len());

    let mut g = c.benchmark_group("sign");
    g.bench_function("raw_ed25519_sign", |b| {
        b.iter(|| f.keys[0].sign(black_box(&f.canon[0])))
    });
    g.bench_function("envelope_sign_ruling", |b| {
        b.iter(|| sign_ruling(&f.keys[0], black_box(f.rulings[0].clone())).unwrap())
    });
    g.bench_function("clone_ruling_only", |b| {
        b.iter(|| black_box(f.rulings[0].clone()))
    });
    g.finish();

    let mut g = c.benchmark_group("verify");
    g.bench_function("raw_verify_strict", |b| {
        b.iter(|| {
            f.vks[0]
                .verify_strict(black_box(&f.canon[0]), &f.sigs[0])
                .unwrap()
        })
    });
    g.bench_function("envelope_verify_cached_key", |b| {
        b.iter(|| {
            signing::verify_ruling_with_key(black_box(&f.signed[0]), &f.vks[0], &fresh()).unwrap()
        })
    });
    g.bench_function("raw_parse_key_then_verify_strict", |b| {
        let kb = f.vks[0].to_bytes();
        b.iter(|| {
            let k = VerifyingKey::from_bytes(black_box(&kb)).unwrap();
            k.verify_strict(&f.canon[0], &f.sigs[0]).unwrap()
        })
    });
    g.bench_function("envelope_verify_parse_key", |b| {
        b.iter(|| verify_ruling(black_box(&f.signed[0]), &fresh()).unwrap())
    });
    g.bench_function("canonical_bytes_only", |b| {
        b.iter(|| ruling_canonical_bytes(black_box(&f.rulings[0])).unwrap())
    });
    g.finish();

    let mut g = c.benchmark_group("batch64");
    g.throughput(Throughput::Elements(64));
    let msgs: Vec<&[u8]> = f.canon.iter().map(|c| c.as_slice()).collect();
    g.bench_function("raw_verify_batch", |b| {
        b.iter(|| ed25519_dalek::verify_batch(black_box(&msgs), &f.sigs, &f.vks).unwrap())
    });
    g.bench_function("envelope_verify_rulings_batch", |b| {
        b.iter(|| {
            let r = verify_rulings_batch(black_box(&f.signed), &fresh());
            assert!(r.iter().all(|x| x.is_ok()));
        })
    });
    g.bench_function("envelope_verify_rulings_batch_cached_keys", |b| {
        b.iter(|| {
            let r = signing::verify_rulings_batch_with_keys(black_box(&f.signed), &f.vks, &fresh());
            assert!(r.iter().all(|x| x.is_ok()));
        })
    });
    g.bench_function("raw_verify_strict_x64", |b| {
        b.iter(|| {
            for i in 0..64 {
                f.vks[i].verify_strict(&f.canon[i], &f.sigs[i]).unwrap();
            }
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2))
        .sample_size(30);
    targets = bench
}
criterion_main!(benches);
