//! The driver: a replicated state moved only through [`apply_batch`], one batch per
//! write, every batch kept for replay (docs/SECURITY.md "Determinism"). Batch time and
//! seed come from a [`Schedule`], never from a clock or a generator.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use calibration::recalibration::ResolvedItem;
use crucible::motion::{Answer, Question};
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

use crate::apply::apply_batch;
use crate::command::{
    Batch, ClientCommand, Command, InternalCommand, Item, ItemReply, TestCommand,
};
use crate::debates::SubmissionHints;
use crate::model::motion_table::{MemoryArchive, MotionRef};
use crate::model::{Motion, MotionStatus, State};
use crate::rules::acceptance::Stance;

use super::KitError;
use super::fixtures::{Judge, PoolMember, cmd, registration, try_cmd};
use super::keys::arbiter_key;
use super::reveal::outcome_reveal;

/// When batch `n` (from 1) is stamped and which seed the leader gives it: `start_ms +
/// n·step_ms` and `seed_base + n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    pub start_ms: u64,
    pub step_ms: u64,
    pub seed_base: u64,
}

impl Default for Schedule {
    /// The schedule the machine's unit tests were written against.
    fn default() -> Self {
        Self {
            start_ms: 1_790_000_000_000,
            step_ms: 1000,
            seed_base: 0,
        }
    }
}

/// A replicated state driven only through `apply_batch`.
pub struct Driver {
    pub state: State,
    pub batches: Vec<Batch>,
    /// The key of every arbiter registered through the kit.
    pub keys: BTreeMap<String, SigningKey>,
    /// The acceptance policy of the debates [`Driver::debate`] creates (`None`: default).
    pub policy: Option<Value>,
    /// The rule set stamped into every batch (`None`: unstamped, as before `rules.rs`).
    pub rules: Option<u32>,
    /// Retire decided motions into this archive after every entry, keeping only the
    /// given number of the latest decided debate motions held (`motion_table`).
    retiring: Option<(Arc<MemoryArchive>, usize)>,
    /// Every entry's replies, in order.
    pub replies: Vec<ItemReply<crate::reply::Reply>>,
    /// The replicas' log keys that seal every round's motion (docs/WIRE.md "Motion
    /// seals"); empty: rounds carry no seals.
    pub sealers: Vec<panel_tlog::NoteSigner>,
    schedule: Schedule,
    requests: u64,
}

impl Driver {
    /// An empty state under `schedule`.
    pub fn with_schedule(schedule: Schedule) -> Driver {
        Driver {
            state: State::default(),
            batches: Vec::new(),
            keys: BTreeMap::new(),
            policy: None,
            rules: None,
            retiring: None,
            replies: Vec::new(),
            sealers: Vec::new(),
            schedule,
            requests: 0,
        }
    }

    /// The default schedule and `pool` registered and admitted without an exam.
    pub fn new(pool: &[PoolMember]) -> Driver {
        let mut d = Driver::with_schedule(Schedule::default());
        for (id, stance, org) in pool {
            d.add_arbiter(id, *stance, org);
        }
        d
    }

    /// Registers `id` with the key [`arbiter_key`] derives and lineage `fam-<id>`, and
    /// admits it with the test command (no exam); panics on a refusal.
    pub fn add_arbiter(&mut self, id: &str, stance: Stance, org: &str) {
        self.try_register(id, org, &format!("fam-{id}"), stance)
            .expect("registered");
        self.try_admit_without_exam(id).expect("admitted");
    }

    /// Registers arbiter `id` under its derived key; keeps the key.
    pub fn try_register(
        &mut self,
        id: &str,
        organisation: &str,
        model_family: &str,
        stance: Stance,
    ) -> Result<(), KitError> {
        let key = arbiter_key(id);
        let public = key.verifying_key().to_bytes();
        self.try_ok(registration(
            id,
            &public,
            organisation,
            model_family,
            stance,
        )?)?;
        self.keys.insert(id.into(), key);
        Ok(())
    }

    /// Admits `id` by the test command `SetAdmission` (score 0.9), bypassing the exam.
    pub fn try_admit_without_exam(&mut self, id: &str) -> Result<Value, KitError> {
        self.try_ok(TestCommand::SetAdmission {
            arbiter_id: id.into(),
            admitted: true,
            score_milli: 900,
        })
    }

    /// Arbiter `id` declares `stance` on debate `debate_id` at `credence_permille`,
    /// signed with its key (`DeclareStance`, docs/coordinator/acceptance.md "Declared priors").
    pub fn try_declare(
        &mut self,
        id: &str,
        debate_id: &str,
        stance: Stance,
        credence_permille: u16,
    ) -> Result<Value, KitError> {
        let d = crate::features::declared_priors::sign(
            self.key(id)?,
            id,
            debate_id,
            stance,
            credence_permille,
        )
        .map_err(|e| KitError::Sign {
            arbiter: id.into(),
            reason: e.to_string(),
        })?;
        self.try_ok(ClientCommand::DeclareStance(d))
    }

    /// The key of a registered arbiter.
    pub fn key(&self, id: &str) -> Result<&SigningKey, KitError> {
        self.keys.get(id).ok_or_else(|| KitError::NoKey(id.into()))
    }

    /// When batches are stamped and seeded.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// The time the next batch will be stamped with.
    pub fn next_time_ms(&self) -> u64 {
        let n = self.batches.len() as u64 + 1;
        self.schedule.start_ms + n * self.schedule.step_ms
    }

    /// One command as one entry; its reply.
    pub fn write(&mut self, command: impl Into<Command>) -> ItemReply<crate::reply::Reply> {
        self.write_batch(vec![command.into()])
            .pop()
            .expect("apply_batch answers every item")
    }

    /// Several commands as one entry, in order; their replies.
    pub fn write_batch(&mut self, commands: Vec<Command>) -> Vec<ItemReply<crate::reply::Reply>> {
        let n = self.batches.len() as u64 + 1;
        let items = commands
            .into_iter()
            .map(|command| {
                self.requests += 1;
                Item {
                    client_id: "sim".into(),
                    request_id: self.requests,
                    command,
                    writer: None,
                }
            })
            .collect();
        let batch = Batch {
            time_ms: self.next_time_ms(),
            seed: self.schedule.seed_base.wrapping_add(n),
            items,
            limits: None,
            checkpoints: None,
            rules: self.rules,
        };
        let r = apply_batch(
            &mut self.state,
            n,
            &batch,
            &panel_proto::VerifiedMemo::default(),
        );
        self.batches.push(batch);
        if let Some((archive, window)) = &self.retiring {
            let retired = self.state.motions.retirable_beyond(*window);
            archive.put(&retired);
            self.state.motions.forget(&retired);
        }
        let replies: Vec<ItemReply<crate::reply::Reply>> =
            r.items.into_iter().map(|o| o.reply).collect();
        self.replies.extend(replies.iter().cloned());
        replies
    }

    /// From now on, retires decided motions after every entry as a replica's snapshots
    /// do (more eagerly with a `window` below the prior check's).
    pub fn retire_into(&mut self, window: usize) -> Arc<MemoryArchive> {
        let archive = Arc::new(MemoryArchive::default());
        self.state.motions.attach(archive.clone());
        self.retiring = Some((archive.clone(), window));
        archive
    }

    /// The command's reply when it applied.
    pub fn try_ok(&mut self, command: impl Into<Command>) -> Result<Value, KitError> {
        applied(self.write(command))
    }

    /// [`Driver::try_ok`] for tests: panics on a refusal.
    #[track_caller]
    pub fn ok(&mut self, command: impl Into<Command>) -> Value {
        match self.write(command) {
            ItemReply::Applied(v) => v.to_json(),
            other => panic!("refused: {other:?}"),
        }
    }

    /// Creates a simulation debate of four seats, two per stance, under `policy` (JSON
    /// of a `Policy`, `None` for the default); its id.
    pub fn try_debate_under(&mut self, policy: Option<Value>) -> Result<String, KitError> {
        let v = self.try_ok(ClientCommand::CreateDebate(try_cmd(json!({
            "resolution": "Resolved: the test resolution holds.",
            "pos_a": "It holds", "pos_b": "It does not hold",
            "seats": 4, "min_per_stance": 2, "simulation": true, "convener": "sim",
            "policy": policy,
        }))?))?;
        field(&v, "debate_id")
    }

    /// A debate under [`Driver::policy`]; panics on a refusal.
    pub fn debate(&mut self) -> String {
        let policy = self.policy.clone();
        self.try_debate_under(policy).expect("debate created")
    }

    /// Asks the debate's panel `q` with the simulation hint `hint`; the motion id.
    pub fn ask(&mut self, debate_id: &str, q: &Question, hint: Option<Answer>) -> String {
        let v = self.ok(ClientCommand::AskPanel(cmd(json!({
            "debate_id": debate_id, "author": "sim", "question": q, "expected": hint,
        }))));
        field(&v, "motion_id").expect("motion id")
    }

    /// A contribution to the debate; the reply.
    pub fn contribute(
        &mut self,
        debate_id: &str,
        author: &str,
        side: &str,
        contribution: Value,
        hints: SubmissionHints,
    ) -> Value {
        self.ok(ClientCommand::Contribute(cmd(json!({
            "debate_id": debate_id, "author": author, "side": side,
            "contribution": contribution, "hints": hints,
        }))))
    }

    /// Every seated arbiter reveals its vote in one `RecordOutcome` (the test path, no
    /// logged round); returns the outcome's reply.
    pub fn answer(&mut self, motion_id: &str, judge: Judge<'_>) -> Value {
        let m: Motion = self.motion(motion_id).expect("motion").clone();
        let reveals: Vec<crate::rules::hex_bytes::RevealBytes> = m
            .seats
            .iter()
            .map(|s| {
                let key = self.key(&s.arbiter_id).expect("key");
                outcome_reveal(key, &m, &s.arbiter_id, judge(&m, &s.arbiter_id)).expect("reveal")
            })
            .collect();
        self.ok(InternalCommand::RecordOutcome(cmd(
            json!({ "motion_id": motion_id, "reveals": reveals }),
        )))
    }

    /// Answers the debate's open motions until none is left.
    pub fn answer_all(&mut self, debate_id: &str, judge: Judge<'_>) {
        for _ in 0..1000 {
            let next = self
                .state
                .motions
                .iter_held()
                .find(|(_, m)| m.status == MotionStatus::Open && m.spec.debate_id == debate_id)
                .map(|(id, _)| id.clone());
            match next {
                Some(id) => {
                    self.answer(&id, judge);
                }
                None => return,
            }
        }
        panic!("the debate's motions never settle");
    }

    /// A motion, held or retired.
    pub fn motion(&self, motion_id: &str) -> Result<MotionRef<'_>, KitError> {
        self.state
            .motions
            .get(motion_id)
            .ok_or_else(|| KitError::NoMotion(motion_id.into()))
    }

    /// The debate's SPEC document.
    pub fn doc(&self, debate_id: &str) -> &crucible::document::Debate {
        &self.state.debates.get(debate_id).expect("debate").debate
    }

    /// Motions of the debate asking `pred`, in id order.
    pub fn motions_asking(&self, debate_id: &str, pred: impl Fn(&Question) -> bool) -> Vec<String> {
        self.state
            .debates
            .get(debate_id)
            .expect("debate")
            .questions
            .iter()
            .filter(|(_, q)| pred(q))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Each arbiter's track-record item resolved on `motion_id`.
    pub fn items_on(&self, motion_id: &str) -> BTreeMap<String, ResolvedItem> {
        self.state
            .arbiters
            .iter()
            .filter_map(|(id, a)| {
                a.recalibration
                    .items
                    .iter()
                    .find(|i| i.motion_id == motion_id)
                    .map(|i| (id.clone(), i.clone()))
            })
            .collect()
    }

    /// Track-record items over every arbiter.
    pub fn total_items(&self) -> usize {
        self.state
            .arbiters
            .iter()
            .map(|(_, a)| a.recalibration.items.len())
            .sum()
    }

    /// The arbiters seated on `motion_id`.
    pub fn seated_on(&self, motion_id: &str) -> BTreeSet<String> {
        self.motion(motion_id)
            .expect("motion")
            .seats
            .iter()
            .map(|s| s.arbiter_id.clone())
            .collect()
    }
}

/// The reply of an applied command, or the refusal as an error.
pub fn applied(reply: ItemReply<crate::reply::Reply>) -> Result<Value, KitError> {
    match reply {
        ItemReply::Applied(v) => Ok(v.to_json()),
        ItemReply::Refused { code, message } => Err(KitError::Refused { code, message }),
    }
}

/// Asserts that `reply` is a refusal with `code` whose message names `needle`.
#[track_caller]
pub fn assert_refused(reply: ItemReply<crate::reply::Reply>, code: &str, needle: &str) {
    match reply {
        ItemReply::Refused { code: got, message } => {
            assert_eq!(got, code, "{message}");
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
        other => panic!("accepted: {other:?}"),
    }
}

/// A string field of a reply.
fn field(v: &Value, name: &'static str) -> Result<String, KitError> {
    v[name]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| KitError::MissingField {
            field: name,
            reply: v.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_stamped_from_the_schedule() {
        let mut d = Driver::with_schedule(Schedule {
            start_ms: 5_000,
            step_ms: 10,
            seed_base: 100,
        });
        d.try_register("x", "o1", "fam-x", Stance::A)
            .expect("registered");
        d.try_admit_without_exam("x").expect("admitted");
        let stamped: Vec<(u64, u64)> = d.batches.iter().map(|b| (b.time_ms, b.seed)).collect();
        assert_eq!(stamped, [(5_010, 101), (5_020, 102)]);
        assert!(d.state.arbiters.get("x").expect("x").admitted);
        assert!(matches!(
            d.try_admit_without_exam("nobody"),
            Err(KitError::Refused { .. })
        ));
    }
}
