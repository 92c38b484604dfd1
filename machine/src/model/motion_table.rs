//! The motion table: the motions the state holds in memory (every open one, and the
//! decided ones not yet retired), in front of an archive of retired decided motions that
//! a replica keeps on disk.
//!
//! A decided motion never changes again: every writer (`LogCommitments`, `SubmitReveal`,
//! `CloseMotion`, `RecordOutcome`) goes through an open motion. So a replica may move
//! decided motions out of memory into its [`MotionArchive`] (the coordinator's
//! `motion_store`, written in the snapshot's own durable commit) and read them back
//! through it, and its memory and snapshots stop growing with the motion history
//! (BENCHMARKS.md, "Soak"). Offline (`panel verify`, the simulator, tests) nothing is
//! retired and there is no archive.
//!
//! Every read answers the same whether a motion is held or retired, so replicas that
//! retired different motions apply identically. The one reader that scans held motions
//! only, the prior check's window (`priors::run_by_claim`), is exact because
//! [`MotionTable::retirable`] never offers a motion inside that window.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::motion::{Motion, MotionStatus};
use crate::rules::acceptance::Acceptance;

/// How many of the most recently decided debate motions the check reads from rule set
/// [`DECLARED_CAMPS`](crate::rules::DECLARED_CAMPS) on: its cost in apply stays bounded however long the record grows,
/// and a claim is judged on recent conduct.
pub const PRIOR_CHECK_WINDOW: usize = 1000;

/// Where a replica keeps its retired motions. Reads only: the shell writes the archive
/// (with its snapshot) and then tells the table what it retired ([`MotionTable::forget`]).
///
/// A read that fails (a disk fault) answers as if nothing were archived; the
/// implementation remembers the failure and its replica stops before the apply counts
/// (the coordinator's `motion_store`).
pub trait MotionArchive: Send + Sync + fmt::Debug {
    /// The retired motion `motion_id`.
    fn get(&self, motion_id: &str) -> Option<Motion>;
    /// The retired motions of `debate_id`.
    fn of_debate(&self, debate_id: &str) -> Vec<Motion>;
    /// The `n` retired motions opened last, latest first.
    fn latest_opened(&self, n: usize) -> Vec<Motion>;
    /// Every retired motion (rule sets before 4 read the whole history).
    fn for_each(&self, f: &mut dyn FnMut(Motion));
    /// How many motions are retired, by kind and verdict.
    fn tally(&self) -> MotionTally;
}

/// Retired motions counted by kind (`MotionKind`'s debug name) and verdict, so counts and
/// metrics need not read the archive.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MotionTally {
    pub by_kind: BTreeMap<String, KindTally>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindTally {
    pub accepted: u64,
    pub deadlocked: u64,
}

impl MotionTally {
    pub fn total(&self) -> u64 {
        self.by_kind
            .values()
            .map(|k| k.accepted + k.deadlocked)
            .sum()
    }

    pub fn accepted(&self) -> u64 {
        self.by_kind.values().map(|k| k.accepted).sum()
    }

    /// Counts a decided motion (an open one is never retired).
    pub fn add(&mut self, m: &Motion) {
        let k = self
            .by_kind
            .entry(format!("{:?}", m.spec.kind))
            .or_default();
        match &m.status {
            MotionStatus::Decided(Acceptance::Accepted { .. }) => k.accepted += 1,
            MotionStatus::Decided(Acceptance::Deadlocked(_)) => k.deadlocked += 1,
            MotionStatus::Open => {}
        }
    }
}

/// A motion read from the table: borrowed when held, owned when read from the archive.
#[derive(Debug)]
pub enum MotionRef<'a> {
    Held(&'a Motion),
    Retired(Box<Motion>),
}

impl Deref for MotionRef<'_> {
    type Target = Motion;
    fn deref(&self) -> &Motion {
        match self {
            MotionRef::Held(m) => m,
            MotionRef::Retired(m) => m,
        }
    }
}

impl Serialize for MotionRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

/// Motions by id: the held ones, and the archive behind them. Serialises as the held
/// motions only (a replica's snapshot leaves out what its archive holds; a snapshot sent
/// to a follower, an export and a backup are completed first with [`MotionTable::restore`]).
#[derive(Clone, Default)]
pub struct MotionTable {
    held: BTreeMap<String, Arc<Motion>>,
    archive: Option<Arc<dyn MotionArchive>>,
    retired: MotionTally,
}

impl fmt::Debug for MotionTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MotionTable")
            .field("held", &self.held)
            .field("retired", &self.retired)
            .finish()
    }
}

impl Serialize for MotionTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.held.iter().map(|(k, v)| (k, &**v)))
    }
}

impl<'de> Deserialize<'de> for MotionTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let held = BTreeMap::<String, Motion>::deserialize(d)?;
        Ok(Self {
            held: held.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
            archive: None,
            retired: MotionTally::default(),
        })
    }
}

impl MotionTable {
    /// Reads retired motions through `archive` from now on (a replica, after loading
    /// its snapshot).
    pub fn attach(&mut self, archive: Arc<dyn MotionArchive>) {
        self.retired = archive.tally();
        self.archive = Some(archive);
    }

    /// Motion `id`, held or retired.
    pub fn get(&self, id: &str) -> Option<MotionRef<'_>> {
        if let Some(m) = self.held.get(id) {
            return Some(MotionRef::Held(m));
        }
        self.retired_motion(id)
            .map(|m| MotionRef::Retired(Box::new(m)))
    }

    fn retired_motion(&self, id: &str) -> Option<Motion> {
        self.archive()?.get(id)
    }

    /// Motion `id` if held: every open motion is.
    pub fn held(&self, id: &str) -> Option<&Motion> {
        self.held.get(id).map(|m| &**m)
    }

    /// Whether motion `id` exists, held or retired.
    pub fn contains(&self, id: &str) -> bool {
        self.held.contains_key(id) || self.retired_motion(id).is_some()
    }

    /// Whether motion `id` is open (an open motion is always held).
    pub fn is_open(&self, id: &str) -> bool {
        self.held
            .get(id)
            .is_some_and(|m| m.status == MotionStatus::Open)
    }

    pub fn insert(&mut self, id: String, motion: Motion) {
        self.held.insert(id, Arc::new(motion));
    }

    /// The held motion to change; copied first if a clone of the table still shares it.
    /// Retired motions are decided, and a decided motion never changes (module docs), so
    /// only held ones are offered.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut Motion> {
        self.held.get_mut(id).map(Arc::make_mut)
    }

    /// The held motions, by id. Complete only where nothing is retired; readers of the
    /// whole history use [`Self::for_each`].
    pub fn iter_held(&self) -> impl Iterator<Item = (&String, &Motion)> {
        self.held.iter().map(|(k, v)| (k, &**v))
    }

    /// Every motion, held and retired (reads the whole archive: for old rule sets,
    /// offline checks and listings).
    pub fn for_each(&self, mut f: impl FnMut(&Motion)) {
        for m in self.held.values() {
            f(m);
        }
        if let Some(a) = self.archive() {
            a.for_each(&mut |m| {
                if !self.held.contains_key(&m.spec.motion_id) {
                    f(&m);
                }
            });
        }
    }

    /// The motions of `debate_id`, held and retired, in opening order.
    pub fn of_debate(&self, debate_id: &str) -> Vec<MotionRef<'_>> {
        self.merged(
            |m| m.spec.debate_id == debate_id,
            |a| a.of_debate(debate_id),
        )
    }

    /// The `n` motions opened last, in opening order.
    pub fn latest_opened(&self, n: usize) -> Vec<MotionRef<'_>> {
        let mut ms = self.merged(|_| true, |a| a.latest_opened(n));
        let skip = ms.len().saturating_sub(n);
        ms.drain(..skip);
        ms
    }

    /// The held motions `keep` selects and the retired ones `retired` reads (a motion
    /// both held and archived counts as held), in opening order.
    fn merged(
        &self,
        keep: impl Fn(&Motion) -> bool,
        retired: impl FnOnce(&dyn MotionArchive) -> Vec<Motion>,
    ) -> Vec<MotionRef<'_>> {
        let mut ms: Vec<MotionRef<'_>> = self
            .held
            .values()
            .filter(|m| keep(m))
            .map(|m| MotionRef::Held(m))
            .collect();
        if let Some(a) = self.archive() {
            ms.extend(
                retired(a)
                    .into_iter()
                    .filter(|m| !self.held.contains_key(&m.spec.motion_id))
                    .map(|m| MotionRef::Retired(Box::new(m))),
            );
        }
        ms.sort_by(|a, b| opening_order(a, b));
        ms
    }

    /// The archive, when it holds anything (nothing to read otherwise).
    fn archive(&self) -> Option<&dyn MotionArchive> {
        self.archive.as_deref().filter(|_| self.retired.total() > 0)
    }

    /// Motions held and retired.
    pub fn len(&self) -> usize {
        self.held.len() + usize::try_from(self.retired.total()).unwrap_or(usize::MAX)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many motions are held in memory.
    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    /// The retired motions' counts.
    pub fn retired(&self) -> &MotionTally {
        &self.retired
    }

    /// The decided motions a replica may retire now: every decided motion except the
    /// [`PRIOR_CHECK_WINDOW`] latest decided debate motions, which the prior check scans
    /// in memory (module docs). Shared, not copied.
    pub fn retirable(&self) -> Vec<Arc<Motion>> {
        self.retirable_beyond(PRIOR_CHECK_WINDOW)
    }

    /// [`Self::retirable`] keeping only the `window` latest decided debate motions (tests
    /// retire more than a replica may, to read every motion through the archive).
    pub(crate) fn retirable_beyond(&self, window: usize) -> Vec<Arc<Motion>> {
        let mut decided: Vec<&Arc<Motion>> = self
            .held
            .values()
            .filter(|m| matches!(m.status, MotionStatus::Decided(_)))
            // A status that can still change (`finality.rs`) needs its row held.
            .filter(|m| m.finality.as_ref().is_none_or(|f| f.status.settled()))
            .collect();
        let windowed = |m: &Motion| m.spec.question.is_some();
        let mut in_window: Vec<&Arc<Motion>> =
            decided.iter().copied().filter(|m| windowed(m)).collect();
        let cut = in_window.len().saturating_sub(window);
        let keep: std::collections::BTreeSet<&str> = if cut == 0 {
            in_window
                .iter()
                .map(|m| m.spec.motion_id.as_str())
                .collect()
        } else if cut == in_window.len() {
            Default::default()
        } else {
            in_window.select_nth_unstable_by(cut, |a, b| decision_order(a, b));
            in_window[cut..]
                .iter()
                .map(|m| m.spec.motion_id.as_str())
                .collect()
        };
        decided.retain(|m| !keep.contains(m.spec.motion_id.as_str()));
        decided.into_iter().cloned().collect()
    }

    /// Drops the held motions the archive now holds (`retired`, as [`Self::retirable`]
    /// gave them and the shell stored them). A row changed since is kept.
    pub fn forget(&mut self, retired: &[Arc<Motion>]) {
        for m in retired {
            let id = m.spec.motion_id.as_str();
            if self.held.get(id).is_some_and(|h| Arc::ptr_eq(h, m)) {
                self.held.remove(id);
                self.retired.add(m);
            }
        }
    }

    /// Makes every motion held again from the archive's whole content (`retired`), so the
    /// table serialises complete: a snapshot sent to a follower, an export, a backup.
    pub fn restore(&mut self, retired: Vec<Motion>) {
        for m in retired {
            self.held
                .entry(m.spec.motion_id.clone())
                .or_insert_with(|| Arc::new(m));
        }
        self.archive = None;
        self.retired = MotionTally::default();
    }
}

/// Listing order: by the log index that opened the motion, then by id.
fn opening_order(a: &Motion, b: &Motion) -> std::cmp::Ordering {
    (a.opened_log_index, &a.spec.motion_id).cmp(&(b.opened_log_index, &b.spec.motion_id))
}

/// The prior check's window order: by the log index that decided the motion, then by id.
pub fn decision_order(a: &Motion, b: &Motion) -> std::cmp::Ordering {
    (a.decided_log_index.unwrap_or(0), &a.spec.motion_id)
        .cmp(&(b.decided_log_index.unwrap_or(0), &b.spec.motion_id))
}

/// An archive in memory: what a replica's store does, for tests of the table and for
/// callers that want the retirement rule without a disk.
#[derive(Debug, Default)]
pub struct MemoryArchive {
    motions: Mutex<BTreeMap<String, Motion>>,
}

impl MemoryArchive {
    /// Stores `retired` (then call [`MotionTable::forget`] with the same motions).
    pub fn put(&self, retired: &[Arc<Motion>]) {
        let mut g = self.lock();
        for m in retired {
            g.insert(m.spec.motion_id.clone(), (**m).clone());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Motion>> {
        self.motions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl MotionArchive for MemoryArchive {
    fn get(&self, motion_id: &str) -> Option<Motion> {
        self.lock().get(motion_id).cloned()
    }

    fn of_debate(&self, debate_id: &str) -> Vec<Motion> {
        self.lock()
            .values()
            .filter(|m| m.spec.debate_id == debate_id)
            .cloned()
            .collect()
    }

    fn latest_opened(&self, n: usize) -> Vec<Motion> {
        let mut all: Vec<Motion> = self.lock().values().cloned().collect();
        all.sort_by(opening_order);
        let skip = all.len().saturating_sub(n);
        all.split_off(skip)
    }

    fn for_each(&self, f: &mut dyn FnMut(Motion)) {
        for m in self.lock().values() {
            f(m.clone());
        }
    }

    fn tally(&self) -> MotionTally {
        let mut t = MotionTally::default();
        for m in self.lock().values() {
            t.add(m);
        }
        t
    }
}
