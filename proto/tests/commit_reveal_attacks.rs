//! The commit-reveal rule as a state machine: the honest path and every refusal.

mod common;

use common::*;
use panel_proto::commit_reveal::{self, CommitRevealBook, CommitRevealError, MotionWindow};
use panel_proto::pb::{Commitment, Reveal, Ruling};
use panel_proto::signing::{VerifiedMemo, VerifyError};
use panel_proto::{SigningKey, sign_ruling};

const COMMIT_AT: i64 = 500;
const REVEAL_AT: i64 = 1_500;

struct Party {
    key: SigningKey,
    reveal: Reveal,
    commitment: Commitment,
}

fn party(label: u8, ruling: Ruling) -> Party {
    let key = key(label);
    let sr = sign_ruling(&key, ruling).unwrap();
    let salt = vec![label; 32];
    let commitment = commit_reveal::commit(&key, &sr, &salt, COMMIT_AT).unwrap();
    Party {
        key,
        reveal: Reveal {
            signed_ruling: Some(sr),
            salt,
            commitment: Some(commitment.clone()),
        },
        commitment,
    }
}

fn book_with_panel(labels: &[u8]) -> CommitRevealBook {
    let keys: Vec<SigningKey> = labels.iter().map(|l| key(*l)).collect();
    let refs: Vec<&SigningKey> = keys.iter().collect();
    let motion = motion_for(&merge_ruling(), &refs);
    let mut book = CommitRevealBook::new();
    book.open(MotionWindow::from_motion(&motion).unwrap())
        .unwrap();
    book
}

#[test]
fn three_arbiters_commit_then_reveal() {
    let mut book = book_with_panel(&[1, 2, 3]);
    let memo = VerifiedMemo::default();
    let parties: Vec<Party> = [1u8, 2, 3]
        .iter()
        .map(|l| {
            let mut r = merge_ruling();
            r.probability = 0.5 + f64::from(*l) / 10.0;
            party(*l, r)
        })
        .collect();
    for p in &parties {
        book.commit(&p.commitment, COMMIT_AT, &memo).unwrap();
    }
    assert!(
        book.revealed("m-1").is_empty(),
        "nothing visible before the window"
    );
    assert_eq!(book.unrevealed("m-1").len(), 3);
    for p in &parties {
        book.reveal(&p.reveal, REVEAL_AT, &memo).unwrap();
    }
    assert_eq!(book.revealed("m-1").len(), 3);
    assert!(book.unrevealed("m-1").is_empty());
    assert_eq!(parties[0].key.verifying_key().to_bytes().len(), 32);
}

#[test]
fn second_commitment_is_refused_even_if_identical() {
    let mut book = book_with_panel(&[1]);
    let memo = VerifiedMemo::default();
    let p = party(1, merge_ruling());
    book.commit(&p.commitment, COMMIT_AT, &memo).unwrap();
    assert!(matches!(
        book.commit(&p.commitment, COMMIT_AT, &memo),
        Err(CommitRevealError::SecondCommitment { .. })
    ));
    let mut changed = merge_ruling();
    changed.decision = panel_proto::pb::Decision::Reject as i32;
    changed.probability = 0.1;
    let q = party(1, changed);
    assert!(matches!(
        book.commit(&q.commitment, COMMIT_AT, &memo),
        Err(CommitRevealError::SecondCommitment { .. })
    ));
}

#[test]
fn reveal_without_commitment_is_refused() {
    let mut book = book_with_panel(&[1, 2]);
    let memo = VerifiedMemo::default();
    let p = party(2, merge_ruling());
    assert!(matches!(
        book.reveal(&p.reveal, REVEAL_AT, &memo),
        Err(CommitRevealError::RevealWithoutCommitment { .. })
    ));
}

#[test]
fn mismatching_reveal_is_refused() {
    let mut book = book_with_panel(&[1]);
    let memo = VerifiedMemo::default();
    let p = party(1, merge_ruling());
    book.commit(&p.commitment, COMMIT_AT, &memo).unwrap();

    // Same ruling, other salt.
    let mut wrong_salt = p.reveal.clone();
    wrong_salt.salt = vec![0xee; 32];
    assert!(matches!(
        book.reveal(&wrong_salt, REVEAL_AT, &memo),
        Err(CommitRevealError::RevealMismatch { .. })
    ));
    // A different, validly signed ruling (changed its mind after seeing others).
    let mut flipped = merge_ruling();
    flipped.decision = panel_proto::pb::Decision::Reject as i32;
    flipped.probability = 0.2;
    let mut other = p.reveal.clone();
    other.signed_ruling = Some(sign_ruling(&p.key, flipped).unwrap());
    assert!(matches!(
        book.reveal(&other, REVEAL_AT, &memo),
        Err(CommitRevealError::RevealMismatch { .. })
    ));
    // Same vote, rationale changed: the reason is committed with the vote.
    let mut new_reason = merge_ruling();
    new_reason.rationale = "A better-sounding reason found later.".into();
    let mut other = p.reveal.clone();
    other.signed_ruling = Some(sign_ruling(&p.key, new_reason).unwrap());
    assert!(matches!(
        book.reveal(&other, REVEAL_AT, &memo),
        Err(CommitRevealError::RevealMismatch { .. })
    ));
    // Salt of the wrong length is named.
    let mut short = p.reveal.clone();
    short.salt.truncate(16);
    assert_eq!(
        book.reveal(&short, REVEAL_AT, &memo),
        Err(CommitRevealError::SaltLength(16))
    );
    // The honest reveal still goes through, once.
    book.reveal(&p.reveal, REVEAL_AT, &memo).unwrap();
    assert!(matches!(
        book.reveal(&p.reveal, REVEAL_AT, &memo),
        Err(CommitRevealError::AlreadyRevealed { .. })
    ));
}

#[test]
fn windows_are_enforced_with_time_passed_in() {
    let mut book = book_with_panel(&[1, 2]);
    let memo = VerifiedMemo::default();
    let p = party(1, merge_ruling());
    // The motion's commit deadline is 1000 (common::motion_for); 1000 itself is inside.
    book.commit(&p.commitment, 1_000, &memo).unwrap();
    let late = party(2, merge_ruling());
    assert!(matches!(
        book.commit(&late.commitment, 1_001, &memo),
        Err(CommitRevealError::CommitWindowClosed { .. })
    ));
    assert!(matches!(
        book.reveal(&p.reveal, 1_000, &memo),
        Err(CommitRevealError::RevealBeforeWindowCloses { .. })
    ));
    assert!(matches!(
        book.reveal(&p.reveal, 2_001, &memo),
        Err(CommitRevealError::RevealWindowClosed { .. })
    ));
    book.reveal(&p.reveal, 2_000, &memo).unwrap();
}

#[test]
fn replayed_ruling_on_another_state_is_refused() {
    // The motion m-1 is open on state 7 ... but the arbiter's ruling judged state 8.
    let mut book = book_with_panel(&[1]);
    let memo = VerifiedMemo::default();
    let mut stale = merge_ruling();
    stale.state_hash = state_hash(8);
    let p = party(1, stale);
    book.commit(&p.commitment, COMMIT_AT, &memo).unwrap();
    assert!(matches!(
        book.reveal(&p.reveal, REVEAL_AT, &memo),
        Err(CommitRevealError::Binding(
            panel_proto::BindingError::StateHash { .. }
        ))
    ));
}

#[test]
fn commitments_from_outsiders_or_forged_are_refused() {
    let mut book = book_with_panel(&[1, 2]);
    let memo = VerifiedMemo::default();
    let outsider = party(9, merge_ruling());
    assert!(matches!(
        book.commit(&outsider.commitment, COMMIT_AT, &memo),
        Err(CommitRevealError::NotOnPanel(_))
    ));
    // A commitment fabricated in arbiter 1's name by arbiter 2.
    let mut forged = party(2, merge_ruling()).commitment;
    forged.arbiter_key = key(1).verifying_key().to_bytes().to_vec();
    assert!(matches!(
        book.commit(&forged, COMMIT_AT, &memo),
        Err(CommitRevealError::BadCommitmentSignature(_))
    ));
    let mut unknown = party(1, merge_ruling()).commitment;
    unknown.motion_id = "nope".into();
    assert!(matches!(
        book.commit(&unknown, COMMIT_AT, &memo),
        Err(CommitRevealError::UnknownMotion(_))
    ));
}

#[test]
fn reveal_with_forged_ruling_signature_is_refused() {
    let mut book = book_with_panel(&[1]);
    let memo = VerifiedMemo::default();
    let p = party(1, merge_ruling());
    book.commit(&p.commitment, COMMIT_AT, &memo).unwrap();
    let mut bad = p.reveal.clone();
    bad.signed_ruling.as_mut().unwrap().signature[3] ^= 4;
    assert!(matches!(
        book.reveal(&bad, REVEAL_AT, &memo),
        Err(CommitRevealError::Verify(VerifyError::BadSignature { .. }))
    ));
}

#[test]
fn motion_window_must_be_consistent() {
    let mut m = motion_for(&merge_ruling(), &[]);
    m.reveal_deadline_unix_ms = 10;
    assert!(matches!(
        MotionWindow::from_motion(&m),
        Err(CommitRevealError::BadWindow(_))
    ));
    let mut book = CommitRevealBook::new();
    let w = MotionWindow::from_motion(&motion_for(&merge_ruling(), &[])).unwrap();
    book.open(w.clone()).unwrap();
    assert!(matches!(
        book.open(w),
        Err(CommitRevealError::MotionAlreadyOpen(_))
    ));
}
