//! The record's entries as the state machine holds them: how many there are, and the ones
//! not yet handed to durable storage.
//!
//! Offline (`panel verify`, the simulator, tests) nothing is handed off, so every entry
//! stays and the log is *complete*. A replica takes the new entries after each apply and
//! keeps them in its store (docs/coordinator/storage.md, "What is durable when"), so its memory
//! and its snapshots do not grow with the record (BENCHMARKS.md, "Soak"). Apply only ever
//! appends and counts; nothing in it reads an old entry, so both forms apply identically.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::record_entry::RecordEntry;

/// Entries `0..len`, of which `held` are the last ones, in order. Shared, so a replica
/// copies the held entries out for its store without copying them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordLog {
    len: u64,
    held: Vec<Arc<RecordEntry>>,
}

/// Why entries handed back to a log do not fit it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordLogError {
    #[error(
        "record entry {found} is where entry {expected} belongs (the stored record has a gap or is out of order)"
    )]
    Sequence { expected: u64, found: u64 },
    #[error("the stored record ends at entry {have}, but the state counts {want} entries")]
    Short { have: u64, want: u64 },
}

impl RecordLog {
    /// Entries applied so far, held or handed off.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The sequence number of the first entry still held.
    pub fn first_held(&self) -> u64 {
        self.len - self.held.len() as u64
    }

    /// Whether every entry is held (nothing was handed off).
    pub fn is_complete(&self) -> bool {
        self.first_held() == 0
    }

    /// Appends the next entry; its `seq` is set to its place.
    pub fn push(&mut self, mut entry: RecordEntry) {
        entry.seq = self.len;
        self.len += 1;
        self.held.push(Arc::new(entry));
    }

    /// Entry `seq`, if held.
    pub fn get(&self, seq: u64) -> Option<&RecordEntry> {
        let i = seq.checked_sub(self.first_held())?;
        self.held.get(usize::try_from(i).ok()?).map(|e| &**e)
    }

    /// How many entries are held.
    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    /// The held entries, shared (a replica's store serialises them off the apply path).
    pub fn held_shared(&self) -> Vec<Arc<RecordEntry>> {
        self.held.clone()
    }

    /// The held entries, in order (all of them when complete).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &RecordEntry> {
        self.held.iter().map(|e| &**e)
    }

    /// Hands the held entries to the caller (a replica's store); the count stays.
    pub fn take_held(&mut self) -> Vec<RecordEntry> {
        std::mem::take(&mut self.held)
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect()
    }

    /// Drops the held entries before `seq` (the caller stored them); the count stays.
    pub fn forget_before(&mut self, seq: u64) {
        let n = seq
            .saturating_sub(self.first_held())
            .min(self.held.len() as u64);
        self.held.drain(..n as usize);
    }

    /// Gives back the entries handed off before the held ones, `0..first_held()` in order,
    /// making the log complete (an export, a backup, a snapshot sent to a follower).
    pub fn restore(&mut self, earlier: Vec<RecordEntry>) -> Result<(), RecordLogError> {
        let want = self.first_held();
        for (i, e) in earlier.iter().enumerate() {
            if e.seq != i as u64 {
                return Err(RecordLogError::Sequence {
                    expected: i as u64,
                    found: e.seq,
                });
            }
        }
        if earlier.len() as u64 != want {
            return Err(RecordLogError::Short {
                have: earlier.len() as u64,
                want,
            });
        }
        let mut all: Vec<Arc<RecordEntry>> = earlier.into_iter().map(Arc::new).collect();
        all.append(&mut self.held);
        self.held = all;
        Ok(())
    }
}

/// A complete log serialises as the table it was before entries could be handed off
/// (`{"000000000000": entry, …}`), so records, backups and snapshots of complete states are
/// unchanged; a log with entries handed off serialises as `{"len": n, "held": […]}`.
impl Serialize for RecordLog {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_complete() {
            s.collect_map(self.held.iter().map(|e| (format!("{:012}", e.seq), e)))
        } else {
            HandedOut {
                len: self.len,
                held: &self.held,
            }
            .serialize(s)
        }
    }
}

#[derive(Serialize)]
struct HandedOut<'a> {
    len: u64,
    held: &'a [Arc<RecordEntry>],
}

#[derive(Deserialize)]
struct Handed {
    len: u64,
    #[serde(default)]
    held: Vec<RecordEntry>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Handed(Handed),
    Table(BTreeMap<String, RecordEntry>),
}

impl<'de> Deserialize<'de> for RecordLog {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let (len, held) = match Stored::deserialize(d)? {
            Stored::Handed(h) => (h.len, h.held),
            Stored::Table(t) => (t.len() as u64, t.into_values().collect()),
        };
        let log = RecordLog {
            len,
            held: held.into_iter().map(Arc::new).collect(),
        };
        let first = len
            .checked_sub(log.held.len() as u64)
            .ok_or_else(|| D::Error::custom("the record holds more entries than it counts"))?;
        for (i, e) in log.held.iter().enumerate() {
            if e.seq != first + i as u64 {
                return Err(D::Error::custom(format!(
                    "record entry {} is where entry {} belongs",
                    e.seq,
                    first + i as u64
                )));
            }
        }
        Ok(log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{ItemReply, TestCommand};
    use serde_json::json;

    fn entry(n: u64) -> RecordEntry {
        RecordEntry {
            seq: 99,
            log_index: n + 1,
            item_index: 0,
            time_ms: n,
            seed: n,
            client_id: "c".into(),
            request_id: n,
            command: TestCommand::Note {
                topic: "t".into(),
                text: format!("note {n}"),
            }
            .into(),
            reply: ItemReply::Applied(json!({ "n": n })),
            rules: None,
        }
    }

    #[test]
    fn a_complete_log_serialises_as_the_old_table() {
        let mut log = RecordLog::default();
        log.push(entry(0));
        log.push(entry(1));
        let v = serde_json::to_value(&log).unwrap();
        assert!(v.get("000000000001").is_some(), "{v}");
        let back: RecordLog = serde_json::from_value(v).unwrap();
        assert_eq!(back, log);
        assert_eq!(back.get(1).unwrap().seq, 1);
    }

    #[test]
    fn entries_handed_off_leave_the_count_and_come_back_in_order() {
        let mut log = RecordLog::default();
        for n in 0..3 {
            log.push(entry(n));
        }
        let stored = log.take_held();
        log.push(entry(3));
        let mut partly = log.clone();
        partly.push(entry(4));
        partly.forget_before(4);
        assert_eq!((partly.len(), partly.first_held()), (5, 4));
        partly.forget_before(99);
        assert_eq!((partly.len(), partly.first_held()), (5, 5));
        assert_eq!((log.len(), log.first_held()), (4, 3));
        assert!(log.get(1).is_none());
        let v = serde_json::to_value(&log).unwrap();
        assert_eq!(v["len"], 4);
        let back: RecordLog = serde_json::from_value(v).unwrap();
        assert_eq!(back, log);

        let mut short = log.clone();
        assert!(matches!(
            short.restore(stored[..2].to_vec()),
            Err(RecordLogError::Short { have: 2, want: 3 })
        ));
        let mut swapped = stored.clone();
        swapped.swap(0, 1);
        assert!(matches!(
            log.clone().restore(swapped),
            Err(RecordLogError::Sequence { .. })
        ));
        log.restore(stored).unwrap();
        assert!(log.is_complete());
        assert_eq!(log.iter().map(|e| e.seq).collect::<Vec<_>>(), [0, 1, 2, 3]);
    }

    #[test]
    fn a_stored_log_that_miscounts_is_refused() {
        let bad = json!({ "len": 0, "held": [serde_json::to_value(entry(0)).unwrap()] });
        assert!(serde_json::from_value::<RecordLog>(bad).is_err());
    }
}
