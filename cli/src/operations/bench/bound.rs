//! The signature-verification bound on this machine, measured in the same run: how many
//! five-ruling decisions per second the cores could check if strict ed25519 verification
//! of each signed ruling, once, were all the work. Each ruling is a v2 envelope (bound to
//! a motion digest, as nodes sign them), verified with `panel_proto`'s
//! `verify_ruling_with_key` (ed25519-dalek `verify_strict`), the replicas' own check, on
//! every core at once.

use std::time::Instant;

use anyhow::{Context, Result};
use panel_proto::pb::{Decision, MotionKind, Ruling, SignedRuling};
use panel_proto::{SigningKey, VerifiedMemo, VerifyingKey};
use serde::Serialize;

/// Rulings in one decision of a five-seat panel.
pub const RULINGS: usize = 5;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Bound {
    /// Threads verifying at once (the machine's available parallelism).
    pub threads: usize,
    pub decisions: usize,
    pub seconds: f64,
    pub verifications_per_s: f64,
    pub decisions_per_s: f64,
}

fn ruling(i: usize, key: &SigningKey) -> Ruling {
    Ruling {
        motion_id: format!("mot_bench_{i:08}"),
        debate_id: "deb_bench".into(),
        kind: MotionKind::Merge as i32,
        state_hash: vec![(i % 251) as u8; 32],
        decision: Decision::Accept as i32,
        probability: 0.9,
        relevance: None,
        tier: None,
        quantiles: vec![],
        receipt: None,
        rationale: "The claim's grounds support its assertion under the stated warrant.".into(),
        arbiter_key: key.verifying_key().to_bytes().to_vec(),
        issued_at_unix_ms: 1_790_000_000_000 + i as i64,
        motion_digest: vec![(i % 253) as u8; 32],
        provenance: None,
    }
}

/// `decisions` decisions of five rulings by five keys, signed once before timing.
fn decisions(keys: &[SigningKey], decisions: usize, offset: usize) -> Result<Vec<SignedRuling>> {
    (0..decisions * RULINGS)
        .map(|n| {
            let key = &keys[n % RULINGS];
            panel_proto::sign_ruling(key, ruling(offset + n / RULINGS, key))
                .context("signing a bench ruling")
        })
        .collect()
}

/// Verifies `rulings` strictly, a fresh memo per decision so no signature is answered
/// from memory; counts the failures (none expected).
fn verify_all(rulings: &[SignedRuling], keys: &[VerifyingKey]) -> usize {
    let mut failed = 0;
    for (d, decision) in rulings.chunks(RULINGS).enumerate() {
        let memo = VerifiedMemo::default();
        for (n, r) in decision.iter().enumerate() {
            let key = &keys[(d * RULINGS + n) % RULINGS];
            if panel_proto::signing::verify_ruling_with_key(r, key, &memo).is_err() {
                failed += 1;
            }
        }
    }
    failed
}

/// Measures the bound with `per_thread` decisions on each core.
pub fn measure(per_thread: usize) -> Result<Bound> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let keys: Vec<SigningKey> = (0..RULINGS)
        .map(|_| Ok(SigningKey::from_bytes(&panel_node::keyfile::random_32()?)))
        .collect::<Result<_>>()?;
    let public: Vec<VerifyingKey> = keys.iter().map(SigningKey::verifying_key).collect();
    let work: Vec<Vec<SignedRuling>> = (0..threads)
        .map(|t| decisions(&keys, per_thread, t * per_thread))
        .collect::<Result<_>>()?;
    let start = Instant::now();
    let failed: usize = std::thread::scope(|s| {
        let handles: Vec<_> = work
            .iter()
            .map(|w| s.spawn(|| verify_all(w, &public)))
            .collect();
        handles
            .into_iter()
            // A thread that panicked counts as every verification failed.
            .map(|h| h.join().unwrap_or(usize::MAX))
            .fold(0usize, usize::saturating_add)
    });
    let seconds = start.elapsed().as_secs_f64();
    anyhow::ensure!(failed == 0, "{failed} bench rulings failed to verify");
    let total = threads * per_thread;
    Ok(Bound {
        threads,
        decisions: total,
        seconds,
        verifications_per_s: (total * RULINGS) as f64 / seconds,
        decisions_per_s: total as f64 / seconds,
    })
}
