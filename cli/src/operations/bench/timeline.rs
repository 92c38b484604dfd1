//! When each step of a decision happened, read from the motion's own record: the leader
//! stamps the batch time on the entry that opened the motion (`opened_at_ms`) and on the
//! one that logged its commitments (`logged_at_ms`); reveals and the close carry only
//! their log index, so their instants are interpolated between the stamped entries of
//! all the run's motions (the error is at most the gap between two stamped entries,
//! reported as `median_gap_ms`). Pure: no clock, no I/O.

use panel_machine::Motion;

/// Log index -> leader time, from the entries whose time the record keeps.
pub struct IndexClock {
    /// (log index, Unix ms), sorted by index, one per index.
    samples: Vec<(u64, u64)>,
}

impl IndexClock {
    /// The stamped entries of `motions`: where each opened and where its commitments were
    /// logged; and `extra` (log index, Unix ms) pairs, such as a motion opened after the
    /// last close so the last closes fall inside the stamped range.
    pub fn from_motions<'a>(
        motions: impl Iterator<Item = &'a Motion>,
        extra: &[(u64, u64)],
    ) -> Self {
        let mut samples: Vec<(u64, u64)> = extra.to_vec();
        for m in motions {
            samples.push((m.opened_log_index, m.opened_at_ms));
            if let Some(r) = &m.round
                && r.logged_at_ms > 0
            {
                samples.push((r.logged_log_index, r.logged_at_ms));
            }
        }
        samples.sort_unstable();
        samples.dedup_by_key(|s| s.0);
        Self { samples }
    }

    /// The leader time of log index `index`: exact at a stamped entry, linear between two,
    /// `None` outside the stamped range.
    pub fn at(&self, index: u64) -> Option<f64> {
        let i = self.samples.partition_point(|s| s.0 < index);
        let &(hi_index, hi_ms) = self.samples.get(i)?;
        if hi_index == index {
            return Some(hi_ms as f64);
        }
        let &(lo_index, lo_ms) = self.samples.get(i.checked_sub(1)?)?;
        let share = (index - lo_index) as f64 / (hi_index - lo_index) as f64;
        Some(lo_ms as f64 + share * (hi_ms as f64 - lo_ms as f64))
    }

    /// The median time between two consecutive stamped entries: the interpolation's scale.
    pub fn median_gap_ms(&self) -> f64 {
        let mut gaps: Vec<u64> = self
            .samples
            .windows(2)
            .map(|w| w[1].1.saturating_sub(w[0].1))
            .collect();
        gaps.sort_unstable();
        gaps.get(gaps.len() / 2).map_or(0.0, |g| *g as f64)
    }
}

/// One decision's milestones, in ms after its claim was sent. Optional ones could not be
/// placed (outside the stamped range, or no cosigned checkpoint seen after the close).
#[derive(Debug, Clone, PartialEq)]
pub struct Milestones {
    /// The claim applied, the panel drawn and the motion opened.
    pub opened: f64,
    /// The commitments logged (after the commit window).
    pub committed: Option<f64>,
    /// The last counted reveal applied.
    pub revealed: Option<f64>,
    /// The close applied: the decision and its record entry.
    pub closed: Option<f64>,
    /// The writer read it decided from a follower.
    pub seen: f64,
    /// The first checkpoint issued after the close was seen cosigned by the witnesses.
    pub cosigned: Option<f64>,
}

/// A checkpoint as the bench saw it: its leader time and when it was first seen cosigned
/// by every witness (both Unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cosigned {
    pub issued_ms: u64,
    pub seen_ms: u64,
}

/// The milestones of the decision of `motion`, sent at `submitted_ms` and seen decided at
/// `seen_ms`.
pub fn milestones(
    motion: &Motion,
    submitted_ms: u64,
    seen_ms: u64,
    clock: &IndexClock,
    cosigned: &[Cosigned],
) -> Milestones {
    let since = |t: f64| t - submitted_ms as f64;
    let round = motion.round.as_ref();
    let last_reveal = round.and_then(|r| {
        r.commitments
            .values()
            .filter_map(|c| c.reveal.as_ref().map(|rv| rv.log_index))
            .max()
    });
    let closed = motion.decided_log_index.and_then(|i| clock.at(i));
    Milestones {
        opened: since(motion.opened_at_ms as f64),
        committed: round
            .filter(|r| r.logged_at_ms > 0)
            .map(|r| since(r.logged_at_ms as f64)),
        revealed: last_reveal.and_then(|i| clock.at(i)).map(since),
        closed: closed.map(since),
        seen: since(seen_ms as f64),
        cosigned: closed
            .and_then(|t| cosigned_after(cosigned, t))
            .map(|s| since(s as f64)),
    }
}

/// When the first checkpoint issued after `t` (a later batch, so it covers an entry
/// applied at `t`) was seen cosigned; the earliest such sighting.
pub fn cosigned_after(cosigned: &[Cosigned], t: f64) -> Option<u64> {
    cosigned
        .iter()
        .filter(|c| c.issued_ms as f64 > t)
        .map(|c| c.seen_ms)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(samples: &[(u64, u64)]) -> IndexClock {
        IndexClock {
            samples: samples.to_vec(),
        }
    }

    #[test]
    fn interpolates_between_stamped_entries_only() {
        let c = clock(&[(10, 1_000), (20, 1_100)]);
        assert_eq!(c.at(10), Some(1_000.0));
        assert_eq!(c.at(15), Some(1_050.0));
        assert_eq!(c.at(20), Some(1_100.0));
        assert_eq!(c.at(9), None);
        assert_eq!(c.at(21), None);
        assert_eq!(c.median_gap_ms(), 100.0);
    }

    #[test]
    fn a_checkpoint_covers_only_what_applied_before_it() {
        let cps = [
            Cosigned {
                issued_ms: 100,
                seen_ms: 150,
            },
            Cosigned {
                issued_ms: 200,
                seen_ms: 260,
            },
        ];
        assert_eq!(cosigned_after(&cps, 99.0), Some(150));
        assert_eq!(cosigned_after(&cps, 100.0), Some(260));
        assert_eq!(cosigned_after(&cps, 200.0), None);
    }
}
