//! One entry's offline proof (`panel proof`, `panel verify-proof`; docs/WIRE.md
//! "Transparency log"): a tlog-proof bundle whose `extra` line is the entry's own leaf
//! bytes, its inclusion proof and the latest checkpoint covering it with every
//! cosignature received. Checking it needs the bundle and a trust policy, nothing else:
//! the leaf hash is recomputed from the entry, so the entry read from `extra` is the one
//! the cosigned checkpoint commits to.

use panel_tlog::merkle::{leaf_hash, verify_inclusion};
use panel_tlog::note::NoteSigner;
use panel_tlog::policy::Policy;
use panel_tlog::proof::ProofBundle;

use crate::model::{RecordEntry, State};

/// Why a proof cannot be made or does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryProofError {
    #[error("entry {seq} is not on the record (it has {len} entries)")]
    NoEntry { seq: u64, len: u64 },
    #[error("no checkpoint covers entry {seq} yet; ask again after the next checkpoint")]
    NotCovered { seq: u64 },
    #[error("the bundle's extra line is not a record entry: {0}")]
    Extra(String),
    #[error("the entry says it is number {entry} but the proof is for index {index}")]
    IndexMismatch { entry: u64, index: u64 },
    #[error("the checkpoint: {0}")]
    Policy(#[from] panel_tlog::policy::PolicyError),
    #[error("the inclusion proof does not hold: {0}")]
    Inclusion(#[from] panel_tlog::ProofError),
    #[error("{0}")]
    Leaf(#[from] crate::model::record_entry::LeafError),
}

/// The proof of entry `seq` against the latest issued checkpoint that covers it, for a
/// state that holds the entry (offline; a replica reads it from its store and calls
/// [`prove_entry`]).
pub fn prove(
    state: &State,
    seq: u64,
    log_key: Option<&NoteSigner>,
) -> Result<ProofBundle, EntryProofError> {
    let len = state.record.len();
    let entry = state
        .record
        .get(seq)
        .ok_or(EntryProofError::NoEntry { seq, len })?;
    prove_entry(state, entry, log_key)
}

/// The proof of `entry` (one of `state`'s) against the latest checkpoint that covers it.
pub fn prove_entry(
    state: &State,
    entry: &RecordEntry,
    log_key: Option<&NoteSigner>,
) -> Result<ProofBundle, EntryProofError> {
    let seq = entry.seq;
    let len = state.record.len();
    if seq >= len {
        return Err(EntryProofError::NoEntry { seq, len });
    }
    let cp = state
        .checkpoints
        .iter()
        .rev()
        .find(|c| c.size > seq && c.size <= state.tree.len())
        .ok_or(EntryProofError::NotCovered { seq })?;
    let inclusion = state.tree.inclusion_proof(seq, cp.size)?;
    Ok(ProofBundle {
        extra: Some(entry.leaf_bytes()?),
        index: seq,
        inclusion,
        checkpoint: crate::features::checkpoints::note(state, cp, log_key),
    })
}

/// What a proof that holds established.
#[derive(Debug, Clone, PartialEq)]
pub struct Proven {
    pub entry: RecordEntry,
    pub size: u64,
    pub origin: String,
    pub witnesses: Vec<String>,
}

/// Checks a bundle against `policy`: the checkpoint satisfies it, the entry in `extra`
/// is at `index` and its leaf is included under the checkpoint's root.
pub fn check(bundle: &ProofBundle, policy: &Policy) -> Result<Proven, EntryProofError> {
    let extra = bundle
        .extra
        .as_deref()
        .ok_or_else(|| EntryProofError::Extra("the bundle has no extra line".into()))?;
    let entry: RecordEntry =
        serde_json::from_slice(extra).map_err(|e| EntryProofError::Extra(e.to_string()))?;
    if entry.seq != bundle.index {
        return Err(EntryProofError::IndexMismatch {
            entry: entry.seq,
            index: bundle.index,
        });
    }
    let v = policy.check(&bundle.checkpoint)?;
    verify_inclusion(
        &leaf_hash(extra),
        bundle.index,
        v.checkpoint.size,
        &bundle.inclusion,
        &v.checkpoint.root,
    )?;
    Ok(Proven {
        entry,
        size: v.checkpoint.size,
        origin: v.checkpoint.origin,
        witnesses: v.witnesses,
    })
}
