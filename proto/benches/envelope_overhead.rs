//! Paired measurement of the signed-ruling envelope's overhead over raw ed25519-dalek.
//!
//! The machine is a shared 2-vCPU VM whose speed drifts by up to 1.7x between runs
//! (BENCHMARKS.md, "Signed rulings"), so comparing two criterion groups measured minutes apart can
//! mislead. Here raw and envelope operations alternate in short rounds (64 operations
//! each), and the overhead is the median over rounds of envelope/raw time. Prints figures;
//! asserts nothing.
//!
//! Run: `cargo bench -p panel-proto --bench envelope_overhead`

// Index loops keep the raw and envelope sides of each pair visibly identical.
#![allow(clippy::needless_range_loop)]

use std::hint::black_box;
use std::time::Instant;

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use panel_proto::VerifiedMemo;
use panel_proto::pb::{Decision, MotionKind, Ruling, SignedRuling};
use panel_proto::sign_ruling;
use panel_proto::signing::{self, ruling_canonical_bytes};

/// A memo for one verification: a shared one would answer every round after the first
/// from its remembered successes, and the bench would time a hash lookup, not a
/// verification.
fn fresh() -> VerifiedMemo {
    VerifiedMemo::default()
}

const N: usize = 64;
const ROUNDS: usize = 60;

fn ruling(i: usize, key: &SigningKey) -> Ruling {
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
                    peer-reviewed study and narrows the claim to what the study supports."
            .into(),
        arbiter_key: key.verifying_key().to_bytes().to_vec(),
        issued_at_unix_ms: 1_790_000_000_000 + i as i64,
        motion_digest: Vec::new(),
        provenance: None,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Times `f` over one round, in ns per operation.
fn round(f: &mut dyn FnMut()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_nanos() as f64 / N as f64
}

fn pair(name: &str, raw: &mut dyn FnMut(), env: &mut dyn FnMut()) {
    raw();
    env();
    let (mut r, mut e, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        // Alternate which side goes first so drift inside a pair cancels too.
        let (a, b) = if i % 2 == 0 {
            let a = round(raw);
            (a, round(env))
        } else {
            let b = round(env);
            (round(raw), b)
        };
        r.push(a);
        e.push(b);
        ratio.push(b / a);
    }
    let over = (median(ratio) - 1.0) * 100.0;
    println!(
        "{name:<34} raw {:>9.2} us/op   envelope {:>9.2} us/op   overhead {over:+.1} %",
        median(r) / 1000.0,
        median(e) / 1000.0
    );
}

fn main() {
    let keys: Vec<SigningKey> = (0..N)
        .map(|i| SigningKey::from_bytes(&[i as u8 + 1; 32]))
        .collect();
    let vks: Vec<VerifyingKey> = keys.iter().map(|k| k.verifying_key()).collect();
    let rulings: Vec<Ruling> = keys.iter().enumerate().map(|(i, k)| ruling(i, k)).collect();
    let signed: Vec<SignedRuling> = keys
        .iter()
        .zip(&rulings)
        .map(|(k, r)| sign_ruling(k, r.clone()).unwrap())
        .collect();
    let canon: Vec<Vec<u8>> = rulings
        .iter()
        .map(|r| ruling_canonical_bytes(r).unwrap())
        .collect();
    let sigs: Vec<ed25519_dalek::Signature> =
        keys.iter().zip(&canon).map(|(k, c)| k.sign(c)).collect();
    let key_bytes: Vec<[u8; 32]> = vks.iter().map(|k| k.to_bytes()).collect();
    let msgs: Vec<&[u8]> = canon.iter().map(|c| c.as_slice()).collect();
    println!(
        "canonical ruling: {} bytes; {N} rulings x {ROUNDS} rounds, medians",
        canon[0].len()
    );

    // The envelope's own work, without any curve arithmetic: shape checks, canonical
    // bytes with the rationale digest, signature parsing. Compared with raw verify_strict
    // in the same rounds, this is the overhead without the noise of two ed25519 runs.
    let mut extra = Vec::new();
    let mut raw = Vec::new();
    for _ in 0..ROUNDS {
        extra.push(round(&mut || {
            for i in 0..N {
                let sr = black_box(&signed[i]);
                let r = sr.ruling.as_ref().unwrap();
                black_box(ruling_canonical_bytes(r).unwrap());
                black_box(panel_proto::keys::parse_signature(&sr.signature).unwrap());
            }
        }));
        raw.push(round(&mut || {
            for i in 0..N {
                vks[i]
                    .verify_strict(black_box(&canon[i]), &sigs[i])
                    .unwrap();
            }
        }));
    }
    let (x, v) = (median(extra), median(raw));
    println!(
        "{:<34} {:>9.3} us/op = {:.2} % of raw verify_strict ({:.2} us/op)",
        "envelope work alone (no crypto)",
        x / 1000.0,
        x / v * 100.0,
        v / 1000.0
    );

    pair(
        "sign",
        &mut || {
            for i in 0..N {
                black_box(keys[i].sign(black_box(&canon[i])));
            }
        },
        &mut || {
            for i in 0..N {
                black_box(sign_ruling(&keys[i], rulings[i].clone()).unwrap());
            }
        },
    );
    pair(
        "verify_strict, cached key",
        &mut || {
            for i in 0..N {
                vks[i]
                    .verify_strict(black_box(&canon[i]), &sigs[i])
                    .unwrap();
            }
        },
        &mut || {
            for i in 0..N {
                signing::verify_ruling_with_key(black_box(&signed[i]), &vks[i], &fresh()).unwrap();
            }
        },
    );
    pair(
        "verify_strict, key from bytes",
        &mut || {
            for i in 0..N {
                let k = VerifyingKey::from_bytes(black_box(&key_bytes[i])).unwrap();
                k.verify_strict(&canon[i], &sigs[i]).unwrap();
            }
        },
        &mut || {
            for i in 0..N {
                panel_proto::verify_ruling(black_box(&signed[i]), &fresh()).unwrap();
            }
        },
    );
    pair(
        "batch of 64, cached keys",
        &mut || ed25519_dalek::verify_batch(black_box(&msgs), &sigs, &vks).unwrap(),
        &mut || {
            let r = signing::verify_rulings_batch_with_keys(black_box(&signed), &vks, &fresh());
            assert!(r.iter().all(|x| x.is_ok()));
        },
    );
    pair(
        "batch of 64, keys from bytes",
        &mut || {
            let ks: Vec<VerifyingKey> = key_bytes
                .iter()
                .map(|b| VerifyingKey::from_bytes(b).unwrap())
                .collect();
            ed25519_dalek::verify_batch(black_box(&msgs), &sigs, &ks).unwrap()
        },
        &mut || {
            let r = panel_proto::verify_rulings_batch(black_box(&signed), &fresh());
            assert!(r.iter().all(|x| x.is_ok()));
        },
    );
}
