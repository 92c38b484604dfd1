//! The commit-reveal rule end to end, on values the fuzzer chooses and keys the harness
//! holds: a signed motion, rulings bound to it, commitments, then a fuzzer-chosen
//! sequence of commits and reveals (honest, tampered, out of window) against
//! `CommitRevealBook`. Garbage signatures stop every other target at the signature
//! check; here the signatures are real, so what lies behind them is reached.
//!
//! Properties: what the harness signs verifies (motion, ruling, commitment, opening); a
//! wrong salt never opens; the book accepts a commitment only inside the commit window
//! from a seated key, once per arbiter, and a reveal only after the commit window and
//! inside the reveal window, from an arbiter that committed, once; revealed rulings never
//! outnumber commitments.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use panel_proto::pb::{self, Commitment, Motion, PanelSeat, Reveal, Ruling, SignedRuling};
use panel_proto::{
    CommitRevealBook, MotionWindow, SigningKey, VerifiedMemo, commit_reveal, ruling_check,
};

const ARBITERS: usize = 4;

fn text(u: &mut Unstructured<'_>, max: usize) -> Result<String> {
    let len = u.int_in_range(0..=max)?;
    let bytes = u.bytes(len)?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

fn hash(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    // Mostly 32 bytes, sometimes another length.
    let len = if u.ratio(15, 16)? {
        32
    } else {
        u.int_in_range(0..=40)?
    };
    Ok(u.bytes(len)?.to_vec())
}

fn ruling_for(u: &mut Unstructured<'_>, m: &Motion, digest: [u8; 32]) -> Result<Ruling> {
    let same = u.ratio(7, 8)?;
    Ok(Ruling {
        motion_id: if same {
            m.motion_id.clone()
        } else {
            text(u, 8)?
        },
        debate_id: if same {
            m.debate_id.clone()
        } else {
            text(u, 8)?
        },
        kind: if same {
            m.kind
        } else {
            u.int_in_range(-1..=10)?
        },
        state_hash: if same { m.state_hash.clone() } else { hash(u)? },
        decision: u.int_in_range(0..=9)?,
        probability: if u.ratio(7, 8)? {
            f64::from(u.int_in_range(0u16..=1000)?) / 1000.0
        } else {
            f64::from_bits(u.arbitrary()?)
        },
        relevance: u.arbitrary::<Option<u8>>()?.map(|v| u32::from(v % 6)),
        tier: u.arbitrary::<Option<u8>>()?.map(|v| u32::from(v % 7)),
        quantiles: (0..u.int_in_range(0..=3)?)
            .map(|_| {
                Ok(pb::Quantile {
                    level: f64::from(u.int_in_range(0u8..=10)?) / 10.0,
                    value: f64::from(u.arbitrary::<i16>()?),
                })
            })
            .collect::<Result<_>>()?,
        receipt: if u.arbitrary()? {
            Some(pb::RetrievalReceipt {
                url: text(u, 16)?,
                sha256: hash(u)?,
                fetched_at_unix_ms: u.int_in_range(-1..=10_000)?,
            })
        } else {
            None
        },
        rationale: text(u, 32)?,
        arbiter_key: Vec::new(),
        issued_at_unix_ms: u.int_in_range(-1..=10_000)?,
        motion_digest: if u.ratio(7, 8)? {
            digest.to_vec()
        } else {
            hash(u)?
        },
        provenance: None,
    })
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let coordinator = SigningKey::from_bytes(&[1; 32]);
    let arbiters: Vec<SigningKey> = (0..ARBITERS)
        .map(|i| SigningKey::from_bytes(&[10 + i as u8; 32]))
        .collect();
    let commit_deadline = u.int_in_range(0i64..=100)?;
    let reveal_deadline = commit_deadline + u.int_in_range(-5i64..=100)?;
    let seated: Vec<bool> = (0..ARBITERS)
        .map(|_| u.arbitrary())
        .collect::<Result<_>>()?;
    let unsigned = Motion {
        motion_id: text(u, 8)?,
        debate_id: text(u, 8)?,
        kind: u.int_in_range(0..=10)?,
        state_hash: hash(u)?,
        projection: None,
        commit_deadline_unix_ms: commit_deadline,
        reveal_deadline_unix_ms: reveal_deadline,
        panel: arbiters
            .iter()
            .zip(&seated)
            .filter(|(_, s)| **s)
            .map(|(k, _)| PanelSeat {
                public_key: k.verifying_key().to_bytes().to_vec(),
                endpoint: String::new(),
            })
            .collect(),
        signer_key: Vec::new(),
        signature: Vec::new(),
        seals: Vec::new(),
    };
    let m = panel_proto::sign_motion(&coordinator, unsigned);
    // One memo for the run, as a coordinator holds one, so the checks below also cover
    // the answers it gives from what it remembers.
    let memo = VerifiedMemo::default();
    let digest = panel_proto::verify_motion(&m, &[coordinator.verifying_key()], &memo)
        .expect("a motion the coordinator signed verifies");
    assert_eq!(digest, panel_proto::motion_digest(&m));
    let Ok(window) = MotionWindow::from_motion(&m) else {
        return Ok(());
    };
    let mut book = CommitRevealBook::new();
    book.open(window.clone())
        .expect("a fresh book opens a checked window");
    assert!(book.open(window.clone()).is_err(), "a motion opens once");

    // Each arbiter's signed ruling, salt and commitment, if its ruling is well formed.
    let mut made: Vec<Option<(SignedRuling, [u8; 32], Commitment)>> = Vec::new();
    for key in &arbiters {
        let r = ruling_for(u, &m, digest)?;
        let salt: [u8; 32] = u.arbitrary()?;
        let at = u.int_in_range(-1i64..=200)?;
        let shape_ok = {
            let mut probe = r.clone();
            probe.arbiter_key = key.verifying_key().to_bytes().to_vec();
            // v1 when there is no motion digest, v2 (exactly 32 bytes) otherwise.
            ruling_check::check_ruling(&probe).is_ok()
                && matches!(probe.motion_digest.len(), 0 | 32)
        };
        match panel_proto::sign_ruling(key, r) {
            Ok(sr) => {
                assert!(shape_ok, "a ruling check_ruling refuses was signed");
                panel_proto::verify_ruling(&sr, &memo)
                    .expect("a ruling the arbiter signed verifies");
                let _ = ruling_check::check_binding(sr.ruling.as_ref().expect("ruling"), &m);
                match commit_reveal::commit(key, &sr, &salt, at) {
                    Ok(c) => {
                        commit_reveal::verify_commitment(&c, &memo)
                            .expect("own commitment verifies");
                        commit_reveal::check_opens(&c, &sr, &salt, &memo).expect("own salt opens");
                        let mut wrong = salt;
                        wrong[0] ^= 1;
                        assert!(commit_reveal::check_opens(&c, &sr, &wrong, &memo).is_err());
                        made.push(Some((sr, salt, c)));
                    }
                    Err(_) => made.push(None),
                }
            }
            Err(_) => {
                assert!(!shape_ok, "a well-formed ruling could not be signed");
                made.push(None);
            }
        }
    }

    let mut committed = [false; ARBITERS];
    let mut revealed = [false; ARBITERS];
    for _ in 0..u.int_in_range(0..=12)? {
        let i = u.int_in_range(0..=ARBITERS - 1)?;
        let now = u.int_in_range(-1i64..=220)?;
        let Some((sr, salt, c)) = &made[i] else {
            continue;
        };
        if u.arbitrary()? {
            let mut c = c.clone();
            if u.ratio(1, 4)? {
                c.committed_at_unix_ms ^= 1;
            }
            let ok = book.commit(&c, now, &memo).is_ok();
            if ok {
                assert!(now <= window.commit_deadline_ms, "commit after the window");
                assert!(!committed[i], "second commitment accepted");
                assert!(
                    window.panel.as_ref().is_none_or(|_| seated[i]),
                    "unseated commit"
                );
                committed[i] = true;
            }
        } else {
            let mut sr = sr.clone();
            let mut salt = salt.to_vec();
            match u.int_in_range(0..=5)? {
                0 => salt[31] ^= 0x80,
                1 => {
                    if let Some(r) = sr.ruling.as_mut() {
                        r.probability = 1.0 - r.probability;
                    }
                }
                _ => {}
            }
            let reveal = Reveal {
                signed_ruling: Some(sr),
                salt,
                commitment: None,
            };
            if book.reveal(&reveal, now, &memo).is_ok() {
                assert!(
                    now > window.commit_deadline_ms,
                    "reveal inside the commit window"
                );
                assert!(
                    now <= window.reveal_deadline_ms,
                    "reveal after the reveal window"
                );
                assert!(committed[i], "reveal without a commitment");
                assert!(!revealed[i], "second reveal accepted");
                revealed[i] = true;
            }
        }
    }
    let n_revealed = book.revealed(&m.motion_id).len();
    let n_committed = book.commitments(&m.motion_id).len();
    assert_eq!(n_revealed, revealed.iter().filter(|r| **r).count());
    assert_eq!(n_committed, committed.iter().filter(|c| **c).count());
    assert_eq!(
        book.unrevealed(&m.motion_id).len(),
        n_committed - n_revealed
    );
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    if data.len() > panel_fuzz::MAX_INPUT {
        return;
    }
    let _ = run(&mut Unstructured::new(data));
});
