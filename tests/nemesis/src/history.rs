//! The client history and the checker that reads it.
//!
//! Every write the workload invokes is recorded with the time it was invoked and, if it was
//! answered, the time of the answer and its outcome: `Ok` (acknowledged, with the log index),
//! `Failed` (certainly not applied: every attempt was refused before anything was proposed)
//! or `Unknown` (timed out, or refused after it may have been proposed). The checker then
//! compares the history with the final log (the notes the cluster applied, in apply order)
//! and with the status samples taken from every replica throughout.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What became of one write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Ok { log_index: u64 },
    Failed(String),
    Unknown(String),
}

/// One invoked write: a `Note` whose text is unique to it.
#[derive(Debug, Clone)]
pub struct WriteOp {
    pub text: String,
    /// Microseconds since the run started.
    pub invoke_us: u64,
    /// When the final answer came (for `Unknown`, when the client gave up).
    pub complete_us: u64,
    pub outcome: Outcome,
    /// Attempts made (one per replica tried).
    pub attempts: u32,
}

/// One note as the cluster applied it.
#[derive(Debug, Clone)]
pub struct Applied {
    pub text: String,
    pub log_index: u64,
}

/// One `Status` answer of one replica.
#[derive(Debug, Clone)]
pub struct StatusSample {
    pub t_us: u64,
    pub replica: u64,
    pub term: u64,
    pub role: String,
    pub leader: Option<u64>,
}

/// A property the history broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error("acknowledged write {text:?} (log index {log_index}) is missing from the final log")]
    LostAck { text: String, log_index: u64 },
    #[error("write {text:?} is in the final log {count} times")]
    Duplicate { text: String, count: usize },
    #[error("{text:?} is in the final log but was never invoked")]
    NeverInvoked { text: String },
    #[error("write {text:?} was reported failed (nothing proposed) but is in the final log")]
    FailedButPresent { text: String },
    #[error(
        "acknowledged write {text:?} answered with log index {acked} but sits at index {actual}"
    )]
    WrongIndex {
        text: String,
        acked: u64,
        actual: u64,
    },
    #[error(
        "real-time order broken: {first:?} was acknowledged at {first_done_us} us, before {second:?} was invoked at {second_invoked_us} us, yet {second:?} precedes it in the log"
    )]
    RealTime {
        first: String,
        first_done_us: u64,
        second: String,
        second_invoked_us: u64,
    },
    #[error("two leaders in term {term}: {leaders:?}")]
    TwoLeaders { term: u64, leaders: Vec<u64> },
    #[error(
        "a linearizable read invoked at {invoked_us} us missed {text:?}, acknowledged at {acked_us} us"
    )]
    StaleRead {
        text: String,
        acked_us: u64,
        invoked_us: u64,
    },
    #[error("a read returned {text:?}, which was not invoked before the read completed")]
    ReadFromFuture { text: String },
    #[error("replica {replica} holds {got} notes at the end where the leader holds {want}")]
    Diverged {
        replica: u64,
        got: usize,
        want: usize,
    },
    #[error("{0}")]
    Other(String),
}

/// Counts for the report.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub invoked: usize,
    pub ok: usize,
    pub failed: usize,
    pub unknown: usize,
    pub unknown_applied: usize,
    pub applied: usize,
    pub samples: usize,
    pub terms: usize,
}

/// Checks the writes against the final log (in apply order) and the status samples.
///
/// - every acknowledged write is present exactly once, at the index it was acknowledged
///   with;
/// - nothing is present that was never invoked, and no write reported failed is present;
/// - real-time order: if write A was acknowledged before write B was invoked, A precedes B
///   in the log (for every B present, acknowledged or not);
/// - no two replicas claimed leadership of one term, and no two leaders were named for one
///   term by anyone.
pub fn check(
    writes: &[WriteOp],
    log: &[Applied],
    samples: &[StatusSample],
) -> (Summary, Vec<Violation>) {
    let mut v = Vec::new();
    let mut s = Summary {
        invoked: writes.len(),
        applied: log.len(),
        samples: samples.len(),
        ..Default::default()
    };
    let by_text: HashMap<&str, &WriteOp> = writes.iter().map(|w| (w.text.as_str(), w)).collect();
    let mut positions: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, a) in log.iter().enumerate() {
        positions.entry(a.text.as_str()).or_default().push(i);
    }
    for (text, pos) in &positions {
        if pos.len() > 1 {
            v.push(Violation::Duplicate {
                text: (*text).to_owned(),
                count: pos.len(),
            });
        }
        match by_text.get(text) {
            None => v.push(Violation::NeverInvoked {
                text: (*text).to_owned(),
            }),
            Some(w) if matches!(w.outcome, Outcome::Failed(_)) => {
                v.push(Violation::FailedButPresent {
                    text: (*text).to_owned(),
                })
            }
            Some(w) if matches!(w.outcome, Outcome::Unknown(_)) => s.unknown_applied += 1,
            _ => {}
        }
    }
    for w in writes {
        match &w.outcome {
            Outcome::Ok { log_index } => {
                s.ok += 1;
                match positions.get(w.text.as_str()).and_then(|p| p.first()) {
                    None => v.push(Violation::LostAck {
                        text: w.text.clone(),
                        log_index: *log_index,
                    }),
                    Some(&i) if log[i].log_index != *log_index => v.push(Violation::WrongIndex {
                        text: w.text.clone(),
                        acked: *log_index,
                        actual: log[i].log_index,
                    }),
                    Some(_) => {}
                }
            }
            Outcome::Failed(_) => s.failed += 1,
            Outcome::Unknown(_) => s.unknown += 1,
        }
    }
    // Real time: walk the log in order; an earlier entry must not have been invoked after a
    // later acknowledged entry completed. Keep the latest invocation seen so far.
    let mut latest: Option<(u64, &str)> = None;
    for a in log {
        let Some(w) = by_text.get(a.text.as_str()) else {
            continue;
        };
        if let (Outcome::Ok { .. }, Some((inv, earlier))) = (&w.outcome, latest)
            && inv > w.complete_us
        {
            v.push(Violation::RealTime {
                first: w.text.clone(),
                first_done_us: w.complete_us,
                second: earlier.to_owned(),
                second_invoked_us: inv,
            });
        }
        if latest.is_none_or(|(inv, _)| w.invoke_us > inv) {
            latest = Some((w.invoke_us, w.text.as_str()));
        }
    }
    // Leaders per term: who said it leads, and whom anyone named.
    let mut claimed: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for x in samples {
        let e = claimed.entry(x.term).or_default();
        if x.role == "Leader" {
            e.insert(x.replica);
        }
        if let Some(l) = x.leader {
            e.insert(l);
        }
    }
    s.terms = claimed.len();
    for (term, leaders) in claimed {
        if leaders.len() > 1 {
            v.push(Violation::TwoLeaders {
                term,
                leaders: leaders.into_iter().collect(),
            });
        }
    }
    (s, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(text: &str, inv: u64, done: u64, outcome: Outcome) -> WriteOp {
        WriteOp {
            text: text.into(),
            invoke_us: inv,
            complete_us: done,
            outcome,
            attempts: 1,
        }
    }

    fn applied(items: &[(&str, u64)]) -> Vec<Applied> {
        items
            .iter()
            .map(|(t, i)| Applied {
                text: (*t).into(),
                log_index: *i,
            })
            .collect()
    }

    #[test]
    fn a_clean_history_passes() {
        let w = [
            op("a", 0, 10, Outcome::Ok { log_index: 3 }),
            op("b", 5, 20, Outcome::Ok { log_index: 4 }),
            op("c", 30, 90, Outcome::Unknown("timeout".into())),
            op("d", 40, 50, Outcome::Failed("no leader".into())),
        ];
        let (s, v) = check(&w, &applied(&[("a", 3), ("b", 4), ("c", 7)]), &[]);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!((s.ok, s.unknown, s.failed, s.unknown_applied), (2, 1, 1, 1));
    }

    #[test]
    fn each_property_is_caught() {
        let w = [
            op("a", 0, 10, Outcome::Ok { log_index: 3 }),
            op("b", 20, 30, Outcome::Ok { log_index: 5 }),
            op("lost", 0, 5, Outcome::Ok { log_index: 9 }),
            op("f", 0, 5, Outcome::Failed("refused".into())),
        ];
        // b was invoked after a was acknowledged but precedes it; a twice; ghost; f present.
        let log = applied(&[("b", 5), ("a", 6), ("a", 7), ("ghost", 8), ("f", 9)]);
        let samples = [
            StatusSample {
                t_us: 0,
                replica: 1,
                term: 2,
                role: "Leader".into(),
                leader: Some(1),
            },
            StatusSample {
                t_us: 1,
                replica: 2,
                term: 2,
                role: "Follower".into(),
                leader: Some(3),
            },
        ];
        let (_, v) = check(&w, &log, &samples);
        let has = |f: &dyn Fn(&Violation) -> bool| v.iter().any(f);
        assert!(has(
            &|x| matches!(x, Violation::Duplicate { text, .. } if text == "a")
        ));
        assert!(has(
            &|x| matches!(x, Violation::NeverInvoked { text } if text == "ghost")
        ));
        assert!(has(
            &|x| matches!(x, Violation::FailedButPresent { text } if text == "f")
        ));
        assert!(has(
            &|x| matches!(x, Violation::LostAck { text, .. } if text == "lost")
        ));
        assert!(has(
            &|x| matches!(x, Violation::WrongIndex { text, .. } if text == "a")
        ));
        assert!(has(
            &|x| matches!(x, Violation::RealTime { first, .. } if first == "a")
        ));
        assert!(has(&|x| matches!(x, Violation::TwoLeaders { term: 2, .. })));
    }
}
