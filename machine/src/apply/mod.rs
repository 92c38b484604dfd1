//! The pure, deterministic `apply`: one Raft entry's batch in, the new state and one reply
//! per item out.
//!
//! `apply` reads only the state, the command and the [`ApplyCtx`] (log index, the leader's
//! stamped time and seed), so every replica and any offline reader of the log reaches the
//! same state (docs/ARCHITECTURE.md, "Apply is deterministic"). Each command validates fully
//! before it mutates, so a refused command changes nothing. One file per command family:
//! [`arbiters`] (registration, exam, keys, priors), [`motions`] (open, outcome),
//! [`debates`] (debates, contributions, panel requests, verdicts), [`notes`] (test
//! commands).

pub(crate) mod arbiters;
mod debates;
pub mod error;
mod federation;
mod final_panel;
#[cfg(test)]
mod funded_appeals_tests;
mod motion_open;
mod motions;
mod notes;
mod precedent;
mod runs;
#[cfg(test)]
mod sample_appeals_tests;

pub use crate::model::ApplyCtx;
pub use error::{ApplyError, RevocationError, RotationError, RoundError, UNDECLARED_NAMED};

use crate::command::{Batch, ClientCommand, Command, InternalCommand, ItemReply, TestCommand};
use crate::features::limits;
use crate::model::record_entry::{LeafError, encode_command};
use crate::model::reply_table::Horizon;
use crate::model::{RecordEntry, State, StoredReply};
use crate::reply::{BatchReply, ItemOutcome, Reply};
use panel_proto::VerifiedMemo;

/// Commands that go on the record: not the test notes, and not the checkpoints' own
/// bookkeeping (a checkpoint is about the record, so it cannot be in it).
pub fn on_record(c: &Command) -> bool {
    !matches!(
        c,
        Command::Test(TestCommand::Put { .. } | TestCommand::Note { .. })
            | Command::Internal(
                InternalCommand::IssueCheckpoint | InternalCommand::AddCosignatures(_)
            )
    )
}

/// Verdicts issued so far across debates (a checkpoint follows every batch that adds one).
fn verdict_count(state: &State) -> usize {
    state
        .debates
        .iter()
        .map(|(_, d)| d.debate.verdicts.len())
        .sum()
}

/// The deduplication key of an item. A write stamped with an authenticated writer is keyed
/// under that writer too, so no client can make another's write a "duplicate" (and drop
/// it) by reusing its client and request ids; unstamped items (the drivers', records from
/// before identities were stamped) keep the plain key. Under a policy with reply bounds
/// (`limits::ReplyBounds`) anonymous writes are keyed under `anonymous/` too: with the
/// plain key, an anonymous client id `<fingerprint>/cli` made the key of that identity's
/// `cli` writes; entries stamped before keep the plain key, as they applied.
fn dedup_key(item: &crate::command::Item, policy: Option<&limits::LimitPolicy>) -> String {
    match &item.writer {
        Some(w) if w.identity != limits::ANONYMOUS => {
            format!("{}/{}#{}", w.identity, item.client_id, item.request_id)
        }
        Some(_) if policy.is_some_and(|p| p.stored_replies.is_some()) => {
            format!(
                "{}/{}#{}",
                limits::ANONYMOUS,
                item.client_id,
                item.request_id
            )
        }
        _ => format!("{}#{}", item.client_id, item.request_id),
    }
}

pub use crate::model::reply_table::{DEDUP_MIN_KEEP_ENTRIES, DEDUP_TTL_MS};
/// How often (in batch time) expired replies are pruned.
const DEDUP_PRUNE_EVERY_MS: u64 = 60 * 1000;

/// The horizon of the latest prune of the deduplication table.
pub fn dedup_horizon(state: &State) -> Horizon {
    Horizon {
        ms: state.requests_pruned_at_ms,
        index: state.requests_pruned_at_index,
    }
}

/// Drops deduplication entries older than [`DEDUP_TTL_MS`] of batch time *and* more than
/// [`DEDUP_MIN_KEEP_ENTRIES`] log entries behind `log_index`, at most once a minute of
/// batch time; deterministic, so every replica keeps the same entries. A prune runs only
/// when batch time is past the last one's, so its horizon only moves forward, which the
/// archive of retired replies relies on (`reply_table.rs`).
fn prune_requests(state: &mut State, now_ms: u64, log_index: u64) {
    if now_ms
        < state
            .requests_pruned_at_ms
            .saturating_add(DEDUP_PRUNE_EVERY_MS)
    {
        return;
    }
    // Entries from snapshots that predate `stored_at_ms` get their lease from now.
    state.requests.stamp_unstamped(now_ms);
    state.requests.prune(Horizon {
        ms: now_ms,
        index: log_index,
    });
    state.requests_pruned_at_ms = now_ms;
    state.requests_pruned_at_index = log_index;
}

/// Apply one Raft entry's batch. Items with a known `(client_id, request_id)` return their
/// stored reply and change nothing. `memo` is the caller's memo of verified signatures
/// ([`ApplyCtx::memo`]).
pub fn apply_batch(
    state: &mut State,
    log_index: u64,
    batch: &Batch,
    memo: &VerifiedMemo,
) -> BatchReply {
    if let Err(e) = crate::features::checkpoints::sync_tree(state) {
        return unleafed(batch, log_index, &e);
    }
    state.rules = crate::rules::after_stamp(state.rules, batch.rules);
    state.batch_time_ms = batch.time_ms;
    let verdicts_before = batch.checkpoints.map(|_| verdict_count(state));
    prune_requests(state, batch.time_ms, log_index);
    if let Some(policy) = &batch.limits {
        limits::prune(state, policy, batch.time_ms);
    }
    // Fixed for the batch: the prune above is the only one it runs.
    let horizon = dedup_horizon(state);
    let mut items = Vec::with_capacity(batch.items.len());
    for (i, item) in batch.items.iter().enumerate() {
        let key = (!item.client_id.is_empty()).then(|| dedup_key(item, batch.limits.as_ref()));
        if let Some(stored) = key.as_deref().and_then(|k| state.requests.get(k, horizon)) {
            items.push(ItemOutcome {
                reply: stored.reply.reply().into_typed(),
                duplicate: true,
                log_index: stored.log_index,
            });
            continue;
        }
        let ctx = ApplyCtx {
            log_index,
            item_index: i as u32,
            time_ms: batch.time_ms,
            seed: batch.seed,
            memo,
        };
        // Limits per identity and organisation (docs/SECURITY.md, "Floods"): checked from
        // the stamped writer and batch time before the command runs, charged after, so
        // every replica refuses the same over-quota writes whoever leads.
        let limited = match (&batch.limits, &item.writer) {
            (Some(policy), Some(writer)) => Some((policy, writer)),
            _ => None,
        };
        // A command bound for the record is encoded before it applies, so one whose JSON
        // cannot be written is refused with nothing changed, and a recorded entry always
        // has its leaf (`RecordEntry::leaf_bytes_with`).
        let encoded = on_record(&item.command).then(|| encode_command(&item.command));
        let checked = match limited {
            Some((policy, writer)) => {
                limits::check(state, policy, writer, &item.command, batch.time_ms)
                    .map_err(ApplyError::from)
            }
            None => Ok(()),
        }
        .and_then(|()| match &encoded {
            Some(Err(e)) => Err(ApplyError::Unencodable {
                what: "the command",
                reason: e.to_string(),
            }),
            _ => Ok(()),
        });
        let result = checked
            .and_then(|()| apply(state, &ctx, &item.client_id, item.request_id, &item.command));
        let over_limit = matches!(result, Err(ApplyError::Limit(_)));
        let reply: ItemReply<Reply> = match result {
            Ok(v) => ItemReply::Applied(v),
            Err(e) => ItemReply::Refused {
                code: e.code(),
                message: e.to_string(),
            },
        };
        if let (Some((policy, writer)), false) = (limited, over_limit) {
            limits::charge(state, policy, writer, &item.command, &reply, batch.time_ms);
        }
        if let (ItemReply::Applied(_), Some(Ok(command_json))) = (&reply, &encoded) {
            let entry = RecordEntry {
                seq: state.record.len(),
                log_index,
                item_index: i as u32,
                time_ms: batch.time_ms,
                seed: batch.seed,
                client_id: item.client_id.clone(),
                request_id: item.request_id,
                command: item.command.clone(),
                reply: reply.to_recorded(),
                rules: (state.rules > 0).then_some(state.rules),
            };
            state.tree.append(&entry.leaf_bytes_with(command_json));
            state.record.push(entry);
        }
        // Under reply bounds some refusals leave no row, and a kept row counts against its
        // writer's bounds (`limits::ReplyBounds`).
        let keep = limited.is_none_or(|(policy, writer)| {
            limits::keeps_reply(policy, writer, &item.command, &reply, over_limit)
        });
        if let Some(k) = key.filter(|_| keep) {
            if let Some((policy, writer)) = limited {
                limits::count_reply(state, policy, writer, &item.command, batch.time_ms);
            }
            state.requests.insert(
                k,
                StoredReply {
                    reply: crate::model::ReplyText::of(&reply),
                    log_index,
                    stored_at_ms: batch.time_ms,
                },
            );
        }
        items.push(ItemOutcome {
            reply,
            duplicate: false,
            log_index,
        });
    }
    // Statuses move at the end of the batch: windows its stamped time closed, appeals its
    // entries decided (`finality.rs`).
    crate::features::finality::advance(state, (log_index, batch.time_ms));
    // Deposits of appeals those statuses ended are returned or forfeited
    // (`appeal_credits.rs`).
    crate::features::appeal_credits::settle(state, (log_index, batch.time_ms));
    let verdict = verdicts_before.is_some_and(|before| verdict_count(state) > before);
    crate::features::checkpoints::after_batch(
        state,
        batch.checkpoints.as_ref(),
        batch.time_ms,
        verdict,
    );
    BatchReply { items }
}

/// Every item of `batch` refused, nothing changed: a held record entry from before this
/// batch has no leaf (`LeafError`), so the tree cannot grow past it. Only a damaged
/// snapshot holds such an entry; every replica refuses alike and the error names it.
fn unleafed(batch: &Batch, log_index: u64, e: &LeafError) -> BatchReply {
    let refusal = ApplyError::Unencodable {
        what: "a held record entry",
        reason: e.to_string(),
    };
    BatchReply {
        items: batch
            .items
            .iter()
            .map(|_| ItemOutcome {
                reply: ItemReply::Refused {
                    code: refusal.code(),
                    message: refusal.to_string(),
                },
                duplicate: false,
                log_index,
            })
            .collect(),
    }
}

/// Apply one command. Pure: the result depends only on the arguments.
pub fn apply(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    request_id: u64,
    command: &Command,
) -> Result<Reply, ApplyError> {
    match command {
        Command::Client(c) => apply_client(state, ctx, client_id, request_id, c),
        Command::Internal(InternalCommand::RecordOutcome(sub)) => {
            motions::record_outcome(state, ctx, sub)
        }
        Command::Internal(InternalCommand::SubmitExam {
            arbiter_id,
            reveals,
            motions,
            sitting,
        }) => {
            if state.rules >= crate::rules::SEALED_EXAMS {
                let at = (ctx.log_index, ctx.time_ms);
                crate::features::exam_sitting::submit(
                    state, at, arbiter_id, *sitting, reveals, motions, ctx.memo,
                )
                .map(Reply::from)
                .map_err(ApplyError::from)
            } else {
                arbiters::submit_exam(state, ctx, arbiter_id, reveals, motions)
            }
        }
        Command::Internal(InternalCommand::SealExamPool(sealed)) => Ok(Reply::from(
            crate::features::exam_sitting::seal(state, ctx.log_index, sealed)?,
        )),
        Command::Internal(InternalCommand::RevealExamKey(k)) => Ok(Reply::from(
            crate::features::exam_sitting::reveal(state, (ctx.log_index, ctx.time_ms), k)?,
        )),
        Command::Internal(InternalCommand::CloseExamSitting(c)) => {
            let closed = crate::features::org_pools::close(state, ctx.log_index, c)
                .map_err(crate::features::exam_sitting::SittingError::from)?;
            Ok(Reply::from(closed))
        }
        Command::Internal(InternalCommand::AdoptCharter(charter)) => {
            federation::adopt_charter(state, charter)
        }
        Command::Internal(InternalCommand::LogCommitments(log)) => {
            motions::log_commitments(state, ctx, log)
        }
        Command::Internal(InternalCommand::CloseMotion { motion_id }) => {
            motions::close_motion(state, ctx, motion_id)
        }
        Command::Internal(InternalCommand::IssueCheckpoint) => {
            Ok(Reply::from(crate::reply::IssueCheckpointReply {
                issued: crate::features::checkpoints::issue(state, ctx.time_ms),
            }))
        }
        Command::Internal(InternalCommand::SeatMotion(seating)) => {
            motion_open::seat_motion(state, seating)
        }
        Command::Internal(InternalCommand::AddCosignatures(cos)) => Ok(Reply::from(
            crate::features::checkpoints::add_cosignatures(state, cos)?,
        )),
        Command::Test(c) => apply_test(state, ctx, client_id, request_id, c),
    }
}

fn apply_client(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    request_id: u64,
    command: &ClientCommand,
) -> Result<Reply, ApplyError> {
    match command {
        ClientCommand::RegisterArbiter(reg) => arbiters::register(state, ctx, reg),
        ClientCommand::RevokeKey { revocation } => arbiters::revoke_key(state, ctx, revocation),
        ClientCommand::RotateKey { rotation } => arbiters::rotate_key(state, ctx, rotation),
        ClientCommand::CheckPriors => {
            arbiters::check_priors(state, (ctx.log_index, ctx.time_ms)).map(Reply::from)
        }
        ClientCommand::AdmitOrganisation(adm) => federation::admit_organisation(state, adm),
        ClientCommand::RemoveOrganisation(rm) => federation::remove_organisation(state, ctx, rm),
        ClientCommand::RotateRosterKey(rot) => federation::rotate_roster_key(state, ctx, rot),
        ClientCommand::RegisterContributor(reg) => {
            federation::register_contributor(state, ctx, reg)
        }
        ClientCommand::CreateDebate(spec) => debates::create_debate(state, ctx, spec),
        ClientCommand::Contribute(sub) => {
            debates::contribute(state, ctx, client_id, request_id, sub)
        }
        ClientCommand::AskPanel(req) => debates::ask_panel(state, ctx, req),
        ClientCommand::ReissueVerdict { debate_id, author } => {
            debates::reissue_verdict(state, ctx, debate_id, author)
        }
        ClientCommand::SubmitReveal { motion_id, reveal } => {
            motions::submit_reveal(state, ctx, client_id, motion_id, reveal)
        }
        ClientCommand::StartRun(req) => runs::start_run(state, ctx, client_id, request_id, req),
        ClientCommand::SubmitRunInput(sub) => {
            runs::submit_input(state, ctx, client_id, request_id, sub)
        }
        ClientCommand::RotateMotionKey(rot) => federation::rotate_motion_key(state, ctx, rot),
        ClientCommand::DeclareStance(d) => arbiters::declare_stance(state, ctx, d),
        ClientCommand::AuthoriseMembership(m) => federation::authorise_membership(state, ctx, m),
        ClientCommand::SetBreaker(order) => federation::set_breaker(state, ctx, order),
        ClientCommand::LastWord(d) => Ok(Reply::from(crate::features::last_word::apply(
            state, ctx, d,
        )?)),
    }
}

fn apply_test(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    request_id: u64,
    command: &TestCommand,
) -> Result<Reply, ApplyError> {
    match command {
        TestCommand::Put { key, value } => notes::put(state, key, value),
        TestCommand::Note { topic, text } => {
            notes::note(state, ctx, client_id, request_id, topic, text)
        }
        TestCommand::SetAdmission {
            arbiter_id,
            admitted,
            score_milli,
        } => arbiters::set_admission(state, arbiter_id, *admitted, *score_milli),
        TestCommand::OpenMotion(spec) => motion_open::open_motion(state, ctx, spec),
        TestCommand::RecordOutcome(sub) => motions::record_outcome(state, ctx, sub),
    }
}

/// Applies one command as its own batch (client id `t`, request id, time and seed from
/// `n`) and returns its reply: the unit tests' way of writing.
#[cfg(test)]
pub(crate) fn write_one(
    state: &mut State,
    n: u64,
    command: Command,
) -> ItemReply<crate::reply::Reply> {
    let batch = Batch {
        time_ms: 1_000 + n,
        seed: n,
        items: vec![crate::command::Item {
            client_id: "t".into(),
            request_id: n,
            command,
            writer: None,
        }],
        limits: None,
        checkpoints: None,
        rules: None,
    };
    let r = apply_batch(state, n, &batch, &VerifiedMemo::default());
    r.items.into_iter().next().expect("one item").reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Item;
    use crate::command::{ArbiterRegistration, MotionSpec, OutcomeSubmission};
    use crate::model::MotionStatus;
    use crate::rules::acceptance::Stance;
    use crate::rules::acceptance::{Decision, MotionKind};
    use crate::rules::ruling::{self, Binding, WireRuling};
    use ed25519_dalek::SigningKey;

    fn batch(items: Vec<(&str, u64, Command)>) -> Batch {
        Batch {
            time_ms: 1_000,
            seed: 7,
            items: items
                .into_iter()
                .map(|(c, r, command)| Item {
                    client_id: c.into(),
                    request_id: r,
                    command,
                    writer: None,
                })
                .collect(),
            limits: None,
            checkpoints: None,
            rules: None,
        }
    }

    fn key(i: u8) -> SigningKey {
        SigningKey::from_bytes(&[i; 32])
    }

    fn register(id: &str, i: u8, stance: Stance, org: &str) -> Command {
        ClientCommand::RegisterArbiter(ArbiterRegistration {
            arbiter_id: id.into(),
            public_key: hex::encode(key(i).verifying_key().to_bytes()).into(),
            organisation: org.into(),
            model_family: format!("fam-{id}"),
            stance,
            endpoint: String::new(),
            attestation: None,
            lineage: None,
        })
        .into()
    }

    /// Four admitted arbiters (two per side) and an open merge motion with four seats.
    fn setup() -> State {
        let mut s = State::default();
        let mut items = vec![];
        for (n, (id, stance, org)) in [
            ("a1", Stance::A, "o1"),
            ("a2", Stance::A, "o2"),
            ("b1", Stance::B, "o1"),
            ("b2", Stance::B, "o3"),
        ]
        .iter()
        .enumerate()
        {
            items.push(("t", n as u64 * 2, register(id, n as u8 + 1, *stance, org)));
            items.push((
                "t",
                n as u64 * 2 + 1,
                TestCommand::SetAdmission {
                    arbiter_id: (*id).into(),
                    admitted: true,
                    score_milli: 900,
                }
                .into(),
            ));
        }
        items.push(("t", 100, open("m1")));
        let r = apply_batch(&mut s, 1, &batch(items), &VerifiedMemo::default());
        assert!(
            r.items
                .iter()
                .all(|o| matches!(o.reply, ItemReply::Applied(_))),
            "{r:?}"
        );
        s
    }

    fn open(id: &str) -> Command {
        TestCommand::OpenMotion(Box::new(MotionSpec {
            motion_id: id.into(),
            debate_id: "d1".into(),
            kind: MotionKind::Merge,
            state_hash: "ab".repeat(32).into(),
            seats: 4,
            min_per_stance: 2,
            contributors: vec![],
            author_model_family: None,
            policy: None,
            question: None,
            projection: None,
            expected: None,
            procedure: None,
            final_panel_of: None,
        }))
        .into()
    }

    const HASH: [u8; 32] = [0xab; 32];

    fn binding() -> Binding<'static> {
        Binding {
            motion_id: "m1",
            debate_id: "d1",
            kind: MotionKind::Merge,
            state_hash: &HASH,
        }
    }

    fn signed(_id: &str, i: u8, d: Decision) -> WireRuling {
        ruling::sign(&key(i), &binding(), d, 0.8, None)
    }

    fn all_yes() -> Vec<WireRuling> {
        vec![
            signed("a1", 1, Decision::Yes),
            signed("a2", 2, Decision::Yes),
            signed("b1", 3, Decision::Yes),
            signed("b2", 4, Decision::Yes),
        ]
    }

    fn outcome(rulings: Vec<WireRuling>) -> Command {
        TestCommand::RecordOutcome(OutcomeSubmission {
            motion_id: "m1".into(),
            rulings,
            reveals: vec![],
            motion: None,
        })
        .into()
    }

    /// One `Note` from client `cli` with request id `id`, in a batch stamped at `t`.
    fn note_at(t: u64, id: u64) -> Batch {
        Batch {
            time_ms: t,
            seed: 1,
            items: vec![Item {
                client_id: "cli".into(),
                request_id: id,
                command: TestCommand::Note {
                    topic: "t".into(),
                    text: format!("{id}"),
                }
                .into(),
                writer: None,
            }],
            limits: None,
            checkpoints: None,
            rules: None,
        }
    }

    #[test]
    fn deduplication_entries_expire_after_their_lease() {
        let mut s = State::default();
        let at = note_at;
        let t0 = 10 * DEDUP_PRUNE_EVERY_MS;
        assert!(!apply_batch(&mut s, 1, &at(t0, 1), &VerifiedMemo::default()).items[0].duplicate);
        // A retry within the lease is a duplicate.
        assert!(
            apply_batch(&mut s, 2, &at(t0 + 1_000, 1), &VerifiedMemo::default()).items[0].duplicate
        );
        // After the lease another write's batch prunes it: the table does not grow for good.
        let far = 1 + DEDUP_MIN_KEEP_ENTRIES;
        apply_batch(
            &mut s,
            far,
            &at(t0 + DEDUP_TTL_MS + DEDUP_PRUNE_EVERY_MS, 2),
            &VerifiedMemo::default(),
        );
        assert!(s.requests.held("cli#1").is_none());
        assert!(s.requests.held("cli#2").is_some());
    }

    /// Found by the nemesis: batch time is one leader's clock, and a leader whose clock
    /// jumped a day ahead pruned every stored reply, so a retried acknowledged write was
    /// applied twice. Recent entries now survive any jump.
    #[test]
    fn a_clock_jump_does_not_forget_recent_replies() {
        let mut s = State::default();
        let at = note_at;
        let t0 = 10 * DEDUP_PRUNE_EVERY_MS;
        assert!(!apply_batch(&mut s, 1, &at(t0, 1), &VerifiedMemo::default()).items[0].duplicate);
        // The next leader's clock is 25 h ahead: a prune runs, and a retry is still a
        // duplicate.
        let jumped = t0 + 25 * 60 * 60 * 1000;
        apply_batch(&mut s, 2, &at(jumped, 2), &VerifiedMemo::default());
        assert!(
            apply_batch(&mut s, 3, &at(jumped + 1, 1), &VerifiedMemo::default()).items[0].duplicate
        );
        assert_eq!(s.notes.get("t").map(Vec::len), Some(2));
    }

    /// A replica that retires every stored reply after every entry (`reply_table.rs`)
    /// answers every write, retry and prune exactly as one that holds them all: leases
    /// running out, the entry window, a clock jumping ahead and back, a key written again
    /// after it expired.
    #[test]
    fn retired_replies_deduplicate_as_held_ones() {
        use crate::model::reply_table::MemoryArchive;
        use std::sync::Arc;
        let hour = 60 * 60 * 1000;
        let step = DEDUP_MIN_KEEP_ENTRIES / 4;
        // (log index, batch time, request id); ids repeat to retry.
        let mut script = Vec::new();
        let mut t = 10 * DEDUP_PRUNE_EVERY_MS;
        for (i, id) in [1, 2, 1, 3, 2, 4, 1, 5, 3, 6, 2, 7, 1, 4, 8, 6, 5, 9, 1, 2]
            .into_iter()
            .enumerate()
        {
            t = match i {
                7 => t + 30 * hour,         // jumps a day ahead
                9 => t - 29 * hour,         // and back
                13 => t + 2 * DEDUP_TTL_MS, // every lease runs out
                _ => t + 7 * hour,
            };
            script.push((1 + i as u64 * step, t, id));
        }
        let run = |retire: bool| {
            let mut s = State::default();
            let archive = Arc::new(MemoryArchive::default());
            if retire {
                s.requests.attach(archive.clone());
            }
            let mut out = Vec::new();
            for &(index, time, id) in &script {
                let r = apply_batch(&mut s, index, &note_at(time, id), &VerifiedMemo::default());
                out.push((r.items[0].duplicate, r.items[0].log_index));
                if retire {
                    let rows = s.requests.retirable();
                    archive.put(&rows);
                    s.requests.forget(&rows);
                    assert_eq!(s.requests.held_count(), 0);
                }
            }
            (out, s.notes.get("t").map(Vec::len))
        };
        let plain = run(false);
        assert_eq!(plain, run(true));
        let dups = plain.0.iter().filter(|(d, _)| *d).count();
        assert!((1..plain.0.len() - 9).contains(&dups), "{plain:?}");
    }

    #[test]
    fn one_writers_ids_cannot_make_anothers_write_a_duplicate() {
        let mut s = State::default();
        let item = |identity: &str| Item {
            client_id: "cli".into(),
            request_id: 1,
            command: register(
                &format!("arb-{identity}"),
                identity.len() as u8,
                Stance::A,
                "o1",
            ),
            writer: Some(crate::log::limit_policy::Writer {
                identity: identity.into(),
                organisation: Some("o1".into()),
            }),
        };
        // Two authenticated writers who happen to (or one of whom means to) use the same
        // client and request ids: both writes apply.
        let r = apply_batch(
            &mut s,
            1,
            &Batch {
                time_ms: 1,
                seed: 1,
                items: vec![item("aaaa"), item("bbbbbb")],
                limits: None,
                checkpoints: None,
                rules: None,
            },
            &VerifiedMemo::default(),
        );
        assert!(r.items.iter().all(|o| !o.duplicate), "{r:?}");
        assert_eq!(s.arbiters.len(), 2);
        // The same writer retrying is still deduplicated.
        let again = apply_batch(
            &mut s,
            2,
            &Batch {
                time_ms: 2,
                seed: 2,
                items: vec![item("aaaa")],
                limits: None,
                checkpoints: None,
                rules: None,
            },
            &VerifiedMemo::default(),
        );
        assert!(again.items[0].duplicate);
    }

    #[test]
    fn retried_request_applies_once() {
        let mut s = State::default();
        let note: Command = TestCommand::Note {
            topic: "t".into(),
            text: "x".into(),
        }
        .into();
        apply_batch(
            &mut s,
            1,
            &batch(vec![("c", 1, note.clone())]),
            &VerifiedMemo::default(),
        );
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("c", 1, note.clone()), ("c", 2, note)]),
            &VerifiedMemo::default(),
        );
        assert!(r.items[0].duplicate);
        assert_eq!(r.items[0].log_index, 1);
        assert!(!r.items[1].duplicate);
        assert_eq!(s.notes.get("t").unwrap().len(), 2);
    }

    #[test]
    fn apply_is_deterministic_across_replicas() {
        let a = setup();
        let b = setup();
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            serde_json::to_value(&b).unwrap()
        );
        assert_eq!(a.motions.get("m1").unwrap().seats.len(), 4);
    }

    /// The saving the memo exists for: a leader's intake verifies the rulings through the
    /// memo its state machine applies with, and apply finds each one there (the memo gains
    /// nothing); a replica applying with its own memo checks and remembers all of them.
    #[test]
    fn apply_reuses_what_intake_verified_through_the_same_memo() {
        let rulings = all_yes();
        let leader = VerifiedMemo::default();
        crate::rules::ruling::intake_check(&rulings, &[], &leader).unwrap();
        assert_eq!(leader.len(), 4);
        let entry = batch(vec![("t", 200, outcome(rulings))]);
        let mut s = setup();
        let r = apply_batch(&mut s, 2, &entry, &leader);
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        assert_eq!(
            leader.len(),
            4,
            "apply verified a signature intake had verified"
        );
        let follower = VerifiedMemo::default();
        let mut f = setup();
        assert_eq!(apply_batch(&mut f, 2, &entry, &follower), r);
        assert_eq!(follower.len(), 4);
    }

    #[test]
    fn accepted_outcome_with_real_signatures() {
        let mut s = setup();
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("t", 200, outcome(all_yes()))]),
            &VerifiedMemo::default(),
        );
        let ItemReply::Applied(v) = &r.items[0].reply else {
            panic!("{r:?}")
        };
        assert!(v.decided().is_some_and(|d| d.verdict.is_accepted()), "{v}");
        // Counting the same rulings again is refused.
        let r = apply_batch(
            &mut s,
            3,
            &batch(vec![("t", 201, outcome(all_yes()))]),
            &VerifiedMemo::default(),
        );
        assert!(
            matches!(&r.items[0].reply, ItemReply::Refused { code, .. } if code == "motion_closed")
        );
    }

    fn refused_code(r: &BatchReply) -> String {
        match &r.items[0].reply {
            ItemReply::Refused { code, message } => format!("{code}: {message}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// The signed wire motion the driver would send for `m1` (seats: keys 1..4).
    fn signed_motion(tweak: impl FnOnce(&mut panel_proto::pb::Motion)) -> panel_proto::pb::Motion {
        let mut m = panel_proto::pb::Motion {
            motion_id: "m1".into(),
            debate_id: "d1".into(),
            kind: panel_proto::pb::MotionKind::Merge as i32,
            state_hash: HASH.to_vec(),
            commit_deadline_unix_ms: 2_000,
            reveal_deadline_unix_ms: 9_000,
            panel: (1..=4)
                .map(|i| panel_proto::pb::PanelSeat {
                    public_key: key(i).verifying_key().to_bytes().to_vec(),
                    endpoint: String::new(),
                })
                .collect(),
            ..Default::default()
        };
        tweak(&mut m);
        panel_proto::sign_motion(&key(50), m)
    }

    /// An envelope v2 ruling of arbiter `i` bound to `digest`.
    fn bound(i: u8, digest: [u8; 32]) -> WireRuling {
        let mut r = signed("", i, Decision::Yes)
            .decode()
            .unwrap()
            .ruling
            .unwrap();
        r.motion_digest = digest.to_vec();
        WireRuling::encode(&panel_proto::sign_ruling(&key(i), r).unwrap())
    }

    fn outcome_with(rulings: Vec<WireRuling>, motion: Option<&panel_proto::pb::Motion>) -> Command {
        TestCommand::RecordOutcome(OutcomeSubmission {
            motion_id: "m1".into(),
            rulings,
            reveals: vec![],
            motion: motion.map(crate::rules::signed_motion::encode),
        })
        .into()
    }

    #[test]
    fn outcome_with_its_signed_motion_and_bound_rulings_is_accepted() {
        let mut s = setup();
        let m = signed_motion(|_| {});
        let d = panel_proto::motion_digest(&m);
        let rulings = (1..=4).map(|i| bound(i, d)).collect();
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("t", 200, outcome_with(rulings, Some(&m)))]),
            &VerifiedMemo::default(),
        );
        let ItemReply::Applied(v) = &r.items[0].reply else {
            panic!("{r:?}")
        };
        assert!(v.decided().is_some_and(|d| d.verdict.is_accepted()), "{v}");
        assert_eq!(v.to_json()["motion_digest"], hex::encode(d));
    }

    #[test]
    fn outcome_with_a_mismatched_or_tampered_motion_is_refused() {
        type Case = (&'static str, fn(&mut panel_proto::pb::Motion), &'static str);
        let cases: &[Case] = &[
            (
                "state hash",
                |m| m.state_hash = vec![0xcd; 32],
                "state hash",
            ),
            ("motion id", |m| m.motion_id = "m2".into(), "id"),
            ("debate", |m| m.debate_id = "d2".into(), "debate"),
            (
                "kind",
                |m| m.kind = panel_proto::pb::MotionKind::Reject as i32,
                "kind",
            ),
            ("seats", |m| m.panel.truncate(3), "seats other keys"),
        ];
        for (what, tweak, needle) in cases {
            let mut s = setup();
            let m = signed_motion(tweak);
            let d = panel_proto::motion_digest(&m);
            let rulings = (1..=4).map(|i| bound(i, d)).collect();
            let r = apply_batch(
                &mut s,
                2,
                &batch(vec![("t", 200, outcome_with(rulings, Some(&m)))]),
                &VerifiedMemo::default(),
            );
            let code = refused_code(&r);
            assert!(
                code.starts_with("motion_refused") && code.contains(needle),
                "{what}: {code}"
            );
            assert_eq!(
                s.motions.get("m1").unwrap().status,
                MotionStatus::Open,
                "{what}"
            );
        }
        // Altered after signing: the projection now says something else.
        let mut s = setup();
        let mut m = signed_motion(|_| {});
        m.projection = Some(panel_proto::pb::ContentProjection {
            question: "forged".into(),
            ..Default::default()
        });
        let d = panel_proto::motion_digest(&m);
        let rulings = (1..=4).map(|i| bound(i, d)).collect();
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("t", 200, outcome_with(rulings, Some(&m)))]),
            &VerifiedMemo::default(),
        );
        assert!(
            refused_code(&r).contains("does not verify"),
            "{}",
            refused_code(&r)
        );
    }

    #[test]
    fn a_v2_ruling_bound_to_another_motion_digest_is_refused() {
        let mut s = setup();
        let m = signed_motion(|_| {});
        let d = panel_proto::motion_digest(&m);
        // Arbiter 4 judged another signed motion under the same id (other deadlines).
        let other = panel_proto::motion_digest(&signed_motion(|m| m.commit_deadline_unix_ms += 1));
        let mut rulings: Vec<WireRuling> = (1..=3).map(|i| bound(i, d)).collect();
        rulings.push(bound(4, other));
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("t", 200, outcome_with(rulings, Some(&m)))]),
            &VerifiedMemo::default(),
        );
        let code = refused_code(&r);
        assert!(
            code.starts_with("motion_refused") && code.contains("other content"),
            "{code}"
        );
        // A v1 ruling next to a signed motion binds nothing and is refused too.
        let mut rulings: Vec<WireRuling> = (1..=3).map(|i| bound(i, d)).collect();
        rulings.push(signed("b2", 4, Decision::Yes));
        let r = apply_batch(
            &mut s,
            3,
            &batch(vec![("t", 201, outcome_with(rulings, Some(&m)))]),
            &VerifiedMemo::default(),
        );
        assert!(
            refused_code(&r).contains("envelope v1"),
            "{}",
            refused_code(&r)
        );
        // A v2 ruling without the signed motion to check it against is refused.
        let rulings = (1..=4).map(|i| bound(i, d)).collect();
        let r = apply_batch(
            &mut s,
            4,
            &batch(vec![("t", 202, outcome_with(rulings, None))]),
            &VerifiedMemo::default(),
        );
        assert!(
            refused_code(&r).contains("carries no signed motion"),
            "{}",
            refused_code(&r)
        );
        assert_eq!(s.motions.get("m1").unwrap().status, MotionStatus::Open);
    }

    #[test]
    fn forged_ruling_refuses_the_submission_and_changes_nothing() {
        let mut s = setup();
        let mut rulings = all_yes();
        rulings[3] = signed("b2", 9, Decision::Yes); // a key that holds no seat
        let before = serde_json::to_value(&s.motions).unwrap();
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("u", 1, outcome(rulings))]),
            &VerifiedMemo::default(),
        );
        assert!(refused_code(&r).starts_with("bad_ruling"), "{r:?}");
        assert_eq!(before, serde_json::to_value(&s.motions).unwrap());
    }

    #[test]
    fn tampered_stale_and_duplicate_rulings_refused() {
        let mut s = setup();
        // Changed after signing.
        let mut rulings = all_yes();
        let mut sr = rulings[0].decode().unwrap();
        sr.ruling.as_mut().unwrap().decision = panel_proto::pb::Decision::Reject as i32;
        rulings[0] = WireRuling::encode(&sr);
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("u", 1, outcome(rulings))]),
            &VerifiedMemo::default(),
        );
        assert!(refused_code(&r).contains("fails verification"), "{r:?}");
        // Signed over another state of the debate.
        let mut rulings = all_yes();
        let stale = Binding {
            state_hash: &[0xcd; 32],
            ..binding()
        };
        rulings[1] = ruling::sign(&key(2), &stale, Decision::Yes, 0.8, None);
        let r = apply_batch(
            &mut s,
            3,
            &batch(vec![("u", 2, outcome(rulings))]),
            &VerifiedMemo::default(),
        );
        assert!(refused_code(&r).contains("not bound"), "{r:?}");
        // The same arbiter twice (a replay to pad the count).
        let mut rulings = all_yes();
        rulings[3] = rulings[0].clone();
        let r = apply_batch(
            &mut s,
            4,
            &batch(vec![("u", 3, outcome(rulings))]),
            &VerifiedMemo::default(),
        );
        assert!(refused_code(&r).starts_with("duplicate_ruling"), "{r:?}");
        // Garbage.
        let r = apply_batch(
            &mut s,
            5,
            &batch(vec![("u", 4, outcome(vec![WireRuling::from_hex("00ff")]))]),
            &VerifiedMemo::default(),
        );
        assert!(refused_code(&r).starts_with("bad_ruling"), "{r:?}");
        assert_eq!(s.motions.get("m1").unwrap().status, MotionStatus::Open);
    }

    #[test]
    fn one_sided_rulings_deadlock_and_are_recorded() {
        let mut s = setup();
        let rulings = vec![
            signed("a1", 1, Decision::Yes),
            signed("a2", 2, Decision::Yes),
            signed("b1", 3, Decision::No),
        ];
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("u", 1, outcome(rulings))]),
            &VerifiedMemo::default(),
        );
        let ItemReply::Applied(v) = &r.items[0].reply else {
            panic!("{r:?}")
        };
        assert!(v.decided().is_some_and(|d| !d.verdict.is_accepted()), "{v}");
        assert_eq!(s.motions.get("m1").unwrap().rulings.len(), 3);
    }

    #[test]
    fn draw_failure_is_a_clear_refusal() {
        let mut s = State::default();
        let r = apply_batch(
            &mut s,
            1,
            &batch(vec![("t", 1, open("m9"))]),
            &VerifiedMemo::default(),
        );
        assert!(
            matches!(&r.items[0].reply, ItemReply::Refused { code, message } if code == "draw_failed" && message.contains("stance A"))
        );
        assert!(s.motions.is_empty());
    }

    fn revoke(i: u8, signer: u8) -> Command {
        let mut doc = panel_proto::keys::sign_revocation(&key(signer), 1, 1, "key lost")
            .expect("sign revocation");
        doc.key = key(i).verifying_key().to_bytes().to_vec();
        ClientCommand::RevokeKey {
            revocation: hex::encode(prost::Message::encode_to_vec(&doc)),
        }
        .into()
    }

    fn rotate(old: u8, new: u8, authority: u8) -> Command {
        let mut doc = panel_proto::keys::sign_rotation(&key(authority), &key(new), 1, "scheduled")
            .expect("sign rotation");
        doc.old_key = key(old).verifying_key().to_bytes().to_vec();
        ClientCommand::RotateKey {
            rotation: hex::encode(prost::Message::encode_to_vec(&doc)),
        }
        .into()
    }

    fn refused(r: &BatchReply, want: &str) -> bool {
        matches!(&r.items[0].reply, ItemReply::Refused { code, .. } if code == want)
    }

    #[test]
    fn a_signed_rotation_moves_the_arbiter_to_its_new_key() {
        let mut s = setup();
        // Authorised by a key that is not the old key: the old-key signature fails.
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("t", 400, rotate(1, 21, 9))]),
            &VerifiedMemo::default(),
        );
        assert!(refused(&r, "rotation_refused"), "{r:?}");
        // Onto a key another arbiter holds.
        let r = apply_batch(
            &mut s,
            3,
            &batch(vec![("t", 401, rotate(1, 2, 1))]),
            &VerifiedMemo::default(),
        );
        assert!(refused(&r, "rotation_refused"), "{r:?}");
        // From a key nobody registered.
        let r = apply_batch(
            &mut s,
            4,
            &batch(vec![("t", 402, rotate(30, 31, 30))]),
            &VerifiedMemo::default(),
        );
        assert!(refused(&r, "rotation_refused"), "{r:?}");
        assert_eq!(
            s.arbiters
                .get("a1")
                .unwrap()
                .registration
                .public_key
                .to_hex(),
            hex::encode(key(1).verifying_key().to_bytes())
        );
        // The holder's own rotation: recorded, old key kept in the history.
        let r = apply_batch(
            &mut s,
            5,
            &batch(vec![("t", 403, rotate(1, 21, 1))]),
            &VerifiedMemo::default(),
        );
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        let a1 = s.arbiters.get("a1").unwrap();
        assert_eq!(
            a1.registration.public_key.to_hex(),
            hex::encode(key(21).verifying_key().to_bytes())
        );
        assert_eq!(
            a1.key_history[0].public_key.to_hex(),
            hex::encode(key(1).verifying_key().to_bytes())
        );
        // A ruling under the old key no longer counts; the new key's does.
        let r = apply_batch(
            &mut s,
            6,
            &batch(vec![("t", 404, outcome(all_yes()))]),
            &VerifiedMemo::default(),
        );
        assert!(refused(&r, "bad_ruling"), "{r:?}");
        let mut rulings = all_yes();
        rulings[0] = signed("a1", 21, Decision::Yes);
        let r = apply_batch(
            &mut s,
            7,
            &batch(vec![("t", 405, outcome(rulings))]),
            &VerifiedMemo::default(),
        );
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        // A revoked key cannot rotate.
        let r = apply_batch(
            &mut s,
            8,
            &batch(vec![("t", 406, revoke(2, 2))]),
            &VerifiedMemo::default(),
        );
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        let r = apply_batch(
            &mut s,
            9,
            &batch(vec![("t", 407, rotate(2, 22, 2))]),
            &VerifiedMemo::default(),
        );
        assert!(refused(&r, "rotation_refused"), "{r:?}");
        // A rotated-away key cannot be registered again by anyone.
        let r = apply_batch(
            &mut s,
            10,
            &batch(vec![("t", 408, register("x1", 1, Stance::A, "o9"))]),
            &VerifiedMemo::default(),
        );
        assert!(refused(&r, "key_in_use"), "{r:?}");
    }

    /// Attack: one key held by two arbiters, by writing it in upper-case hex; and an
    /// arbiter registered so could be neither revoked nor rotated (both name the key in
    /// lower case). From rule set 28 keys are compared as keys; below it, as they applied.
    #[test]
    fn a_key_in_upper_case_hex_is_the_same_key() {
        let upper = |id: &str, i: u8| -> Command {
            let mut c = register(id, i, Stance::A, "o9");
            if let Command::Client(ClientCommand::RegisterArbiter(r)) = &mut c {
                r.public_key = r.public_key.to_hex().to_ascii_uppercase().into();
            }
            c
        };
        let at = |rules: u32, n: u64, c: Command| {
            let mut b = batch(vec![("t", 500 + n, c)]);
            b.rules = Some(rules);
            b
        };
        let memo = VerifiedMemo::default();
        let keys_as_bytes = crate::rules::KEYS_AS_BYTES;
        // Before the rule set: a second arbiter on a1's key, and two more in upper case.
        let mut s = setup();
        for (n, c) in [
            (0, upper("x1", 1)),
            (1, upper("x2", 40)),
            (2, upper("x3", 42)),
        ] {
            let r = apply_batch(&mut s, 2 + n, &at(keys_as_bytes - 1, n, c), &memo);
            assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        }
        // From it: the same key in any case is refused, naming its holder.
        let r = apply_batch(&mut s, 5, &at(keys_as_bytes, 3, upper("x4", 2)), &memo);
        assert!(refused(&r, "key_in_use"), "{r:?}");
        assert!(format!("{r:?}").contains("a2"), "{r:?}");
        // A fresh key is registered in one spelling only: lower case.
        let r = apply_batch(&mut s, 5, &at(keys_as_bytes, 7, upper("x5", 50)), &memo);
        assert!(refused(&r, "bad_ruling"), "{r:?}");
        assert!(format!("{r:?}").contains("lower-case hex"), "{r:?}");
        // A rotation onto a key held in upper case is refused too.
        let r = apply_batch(&mut s, 6, &at(keys_as_bytes, 4, rotate(3, 42, 3)), &memo);
        assert!(refused(&r, "rotation_refused"), "{r:?}");
        // And the keys registered in upper case can now be rotated and revoked.
        let r = apply_batch(&mut s, 7, &at(keys_as_bytes, 5, rotate(40, 41, 40)), &memo);
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        assert_eq!(
            s.arbiters
                .get("x2")
                .unwrap()
                .registration
                .public_key
                .to_hex(),
            hex::encode(key(41).verifying_key().to_bytes())
        );
        let r = apply_batch(&mut s, 8, &at(keys_as_bytes, 6, revoke(42, 42)), &memo);
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        assert!(s.arbiters.get("x3").unwrap().revoked.is_some());
    }

    #[test]
    fn a_revoked_key_is_not_drawn_and_its_rulings_are_refused() {
        let mut s = setup();
        // A revocation signed by someone else is refused and changes nothing.
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("t", 300, revoke(1, 9))]),
            &VerifiedMemo::default(),
        );
        assert!(
            matches!(&r.items[0].reply, ItemReply::Refused { code, .. } if code == "revocation_refused"),
            "{r:?}"
        );
        assert!(s.arbiters.get("a1").unwrap().revoked.is_none());
        // The holder's own signed revocation is recorded.
        let r = apply_batch(
            &mut s,
            3,
            &batch(vec![("t", 301, revoke(1, 1))]),
            &VerifiedMemo::default(),
        );
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        let a1 = s.arbiters.get("a1").unwrap();
        assert!(a1.revoked.is_some() && !a1.admitted);
        // Its ruling on a motion it was seated on no longer counts: the submission is refused.
        let r = apply_batch(
            &mut s,
            4,
            &batch(vec![("t", 302, outcome(all_yes()))]),
            &VerifiedMemo::default(),
        );
        assert!(
            matches!(&r.items[0].reply, ItemReply::Refused { code, .. } if code == "bad_ruling"),
            "{r:?}"
        );
        // And it is never drawn again: four seats cannot be filled from three arbiters.
        let r = apply_batch(
            &mut s,
            5,
            &batch(vec![("t", 303, open("m2"))]),
            &VerifiedMemo::default(),
        );
        assert!(
            matches!(&r.items[0].reply, ItemReply::Refused { code, .. } if code == "draw_failed"),
            "{r:?}"
        );
    }
}
