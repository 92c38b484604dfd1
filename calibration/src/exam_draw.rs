//! One arbiter's exam from a pool: which items it is asked, in which order, and in which
//! order each item presents its two sides. All three are functions of a seed the
//! coordinator logs, so anyone can recompute what an arbiter saw (docs/CALIBRATION.md,
//! "Bias probes and a committed answer key").
//!
//! * [`draw_items`] draws the requested number of items of each kind. Probe groups are
//!   drawn whole, because a probe measures nothing without its base. Objective items
//!   (and groups whose base is objective) are drawn before the others, so the objective
//!   subset is in every draw that has room for it. The result is in asking order, a seeded
//!   shuffle of the drawn items, so a group's variants are not asked side by side.
//! * [`presentation`] says whether an item's two sides are shown in the other order.
//!   [`item_presentation`] keys it by the probe group for probe items, so every variant of
//!   a group is flipped together and an `order_swapped` item is always presented in the
//!   other order from its base; the base is not always the one with the claimant first.

use serde::Serialize;
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::exam::{Exam, ExamItem, LineError};
use crate::public_pool::{ItemKind, PoolError, PublicItem, PublicPool};
use crate::seeded_rng::SplitMix64;

/// Domain tag of the presentation hash.
pub const PRESENTATION_DOMAIN: &str = "crucible-panel/exam/presentation/v1\n";

/// How many items of each kind to draw. `binary` counts every binary item, probe variants
/// included; `probe_groups` of those binary items come as whole groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct DrawCounts {
    pub binary: usize,
    pub probe_groups: usize,
    pub relevance: usize,
    pub tier: usize,
    pub quantity: usize,
}

impl DrawCounts {
    /// Items one draw asks, every kind together.
    pub fn items(&self) -> usize {
        self.binary + self.relevance + self.tier + self.quantity
    }

    /// The whole pool: every item, every group.
    pub fn all(pool: &Exam) -> Result<Self, DrawError> {
        Ok(Self {
            binary: pool.count("binary"),
            probe_groups: pool.probe_groups()?.len(),
            relevance: pool.count("relevance"),
            tier: pool.count("tier"),
            quantity: pool.count("quantity"),
        })
    }
}

/// Why a draw cannot be made.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum DrawError {
    #[error("the pool has {available} {what} but the draw asks for {requested}: ask for fewer")]
    NotEnough {
        what: &'static str,
        requested: usize,
        available: usize,
    },
    #[error(
        "the draw asks for {binary} binary items but its {groups} probe groups alone hold {group_items}: raise the binary count or draw fewer groups"
    )]
    GroupsExceedBinary {
        binary: usize,
        groups: usize,
        group_items: usize,
    },
    #[error("the pool's probe groups do not check: {0}")]
    Pool(#[from] LineError),
    #[error("the published pool does not check: {0}")]
    Public(#[from] PoolError),
}

/// Draw one arbiter's items from `pool` with `seed`, as item ids in asking order.
///
/// The same pool, seed and counts always give the same list. The stream of the seeded
/// generator is consumed in a fixed order: probe groups, then plain binary items, then
/// relevance, tier and quantity items, then the final shuffle.
pub fn draw_items(pool: &Exam, seed: u64, counts: &DrawCounts) -> Result<Vec<String>, DrawError> {
    pool.probe_groups()?;
    draw_public(&PublicPool::of(pool), seed, counts)
}

/// [`draw_items`] on a pool's public half: the draw reads only kinds, probe groups and
/// objective flags, so a coordinator can draw, and anyone can re-draw, before the answer
/// key is revealed. `draw_items(exam, ..)` equals `draw_public(&PublicPool::of(exam), ..)`.
pub fn draw_public(
    pool: &PublicPool,
    seed: u64,
    counts: &DrawCounts,
) -> Result<Vec<String>, DrawError> {
    let groups = pool.groups()?;
    let mut rng = SplitMix64::new(seed);
    let mut drawn: Vec<String> = Vec::new();

    let mut by_objective: Vec<_> = groups.iter().collect();
    let chosen = take_preferring(
        &mut rng,
        &mut by_objective,
        |g| g.objective,
        counts.probe_groups,
        "probe groups",
    )?;
    let group_items: usize = chosen.iter().map(|g| g.members.len()).sum();
    let plain_binary =
        counts
            .binary
            .checked_sub(group_items)
            .ok_or(DrawError::GroupsExceedBinary {
                binary: counts.binary,
                groups: chosen.len(),
                group_items,
            })?;
    drawn.extend(chosen.iter().flat_map(|g| g.members.iter().cloned()));

    let mut plain: Vec<&PublicItem> = pool
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Binary && i.probe.is_none())
        .collect();
    let taken = take_preferring(
        &mut rng,
        &mut plain,
        |i| i.objective,
        plain_binary,
        "binary items outside probe groups",
    )?;
    drawn.extend(taken.iter().map(|i| i.id.clone()));

    for (kind, what, n) in [
        (ItemKind::Relevance, "relevance items", counts.relevance),
        (ItemKind::Tier, "tier items", counts.tier),
        (ItemKind::Quantity, "quantity items", counts.quantity),
    ] {
        let mut of_kind: Vec<&PublicItem> = pool.items.iter().filter(|i| i.kind == kind).collect();
        let taken = take_preferring(&mut rng, &mut of_kind, |i| i.objective, n, what)?;
        drawn.extend(taken.iter().map(|i| i.id.clone()));
    }

    rng.shuffle(&mut drawn);
    Ok(drawn)
}

/// Domain mixed into the seed of the extra items' generator, so they are drawn apart from
/// the draw they extend.
const EXTRA_SEED_DOMAIN: u64 = 0x6865_6c64_2d62_6163; // "held-bac"

/// [`draw_public`] and then `extra` more plain binary items (outside probe groups) drawn
/// from those it left, with a generator of their own, appended last. The first part is
/// exactly the draw of `counts`, so items held back from the end (`exam_hold_back`) leave
/// the decision on the very items of that draw.
pub fn draw_public_with_extra(
    pool: &PublicPool,
    seed: u64,
    counts: &DrawCounts,
    extra: usize,
) -> Result<Vec<String>, DrawError> {
    let mut drawn = draw_public(pool, seed, counts)?;
    let mut left: Vec<&PublicItem> = pool
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Binary && i.probe.is_none() && !drawn.contains(&i.id))
        .collect();
    let mut rng = SplitMix64::new(seed ^ EXTRA_SEED_DOMAIN);
    let taken = take_preferring(
        &mut rng,
        &mut left,
        |_| false,
        extra,
        "binary items outside probe groups beyond the draw",
    )?;
    drawn.extend(taken.iter().map(|i| i.id.clone()));
    Ok(drawn)
}

/// Shuffle `units`, move the preferred ones to the front (keeping their shuffled order),
/// and take `n`.
fn take_preferring<T: Copy>(
    rng: &mut SplitMix64,
    units: &mut Vec<T>,
    preferred: impl Fn(&T) -> bool,
    n: usize,
    what: &'static str,
) -> Result<Vec<T>, DrawError> {
    if n > units.len() {
        return Err(DrawError::NotEnough {
            what,
            requested: n,
            available: units.len(),
        });
    }
    rng.shuffle(units);
    // A stable sort keeps the shuffled order within each class.
    units.sort_by_key(|u| !preferred(u));
    units.truncate(n);
    Ok(std::mem::take(units))
}

/// The order in which an item presents its two sides to one arbiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Presentation {
    /// Show the two sides in the other order from the item's text. An item with one side
    /// ignores it.
    pub swapped: bool,
}

/// The presentation of the item (or probe group) `key` for the arbiter drawn with `seed`:
/// the low bit of the first byte of SHA-256 over [`PRESENTATION_DOMAIN`], the seed as 8
/// big-endian bytes, and `key`'s UTF-8 bytes. Each (seed, key) is an independent fair coin
/// that anyone holding the logged seed recomputes.
pub fn presentation(seed: u64, key: &str) -> Presentation {
    let mut h = Sha256::new();
    h.update(PRESENTATION_DOMAIN.as_bytes());
    h.update(seed.to_be_bytes());
    h.update(key.as_bytes());
    let digest = h.finalize();
    Presentation {
        swapped: digest[0] & 1 == 1,
    }
}

/// The presentation of `item`: keyed by `group:<group id>` for a probe item, so a group's
/// variants flip together, and by `item:<item id>` otherwise (the prefixes keep a group
/// and an item of the same name apart).
pub fn item_presentation(seed: u64, item: &ExamItem) -> Presentation {
    match &item.probe {
        Some(p) => presentation(seed, &format!("group:{}", p.group)),
        None => presentation(seed, &format!("item:{}", item.id)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn extra_items_extend_the_draw_without_changing_it() {
        let exam = crate::exam::load_exam(include_str!("../../exams/default-v2.jsonl")).unwrap();
        let pool = PublicPool::of(&exam);
        let counts = DrawCounts {
            binary: 40,
            probe_groups: 6,
            relevance: 6,
            tier: 6,
            quantity: 12,
        };
        for seed in [1_u64, 7, 0xDEAD_BEEF] {
            let base = draw_public(&pool, seed, &counts).unwrap();
            let more = draw_public_with_extra(&pool, seed, &counts, 8).unwrap();
            assert_eq!(more[..base.len()], base[..]);
            assert_eq!(more.len(), base.len() + 8);
            for id in &more[base.len()..] {
                let item = pool.item(id).unwrap();
                assert!(item.kind == ItemKind::Binary && item.probe.is_none());
                assert!(!base.contains(id));
            }
        }
        // A pool without enough plain binary items left says so.
        let e = draw_public_with_extra(&pool, 1, &counts, 100).unwrap_err();
        assert!(e.to_string().contains("beyond the draw"), "{e}");
    }
    use crate::exam::load_exam;

    /// Six groups of four (three objective), ten plain binary items (four objective),
    /// three relevance items.
    fn pool() -> Exam {
        let mut text = String::from(r#"{"exam":"pool","version":"1","quantiles":[0.05,0.5,0.95]}"#);
        for g in 0..6 {
            for v in ["base", "order_swapped", "padded", "consequence"] {
                let objective = if v == "base" && g < 3 {
                    r#","objective":true"#
                } else {
                    ""
                };
                text.push_str(&format!(
                    "\n{{\"id\":\"g{g}-{v}\",\"kind\":\"binary\",\"question\":\"q\",\"gold\":true,\"source\":\"s\",\"probe\":{{\"group\":\"g{g}\",\"variant\":\"{v}\"}}{objective}}}"
                ));
            }
        }
        for i in 0..10 {
            let objective = if i < 4 { r#","objective":true"# } else { "" };
            text.push_str(&format!(
                "\n{{\"id\":\"b{i}\",\"kind\":\"binary\",\"question\":\"q\",\"gold\":false,\"source\":\"s\"{objective}}}"
            ));
        }
        for i in 0..3 {
            text.push_str(&format!(
                "\n{{\"id\":\"r{i}\",\"kind\":\"relevance\",\"question\":\"q\",\"gold\":0.5,\"source\":\"s\"}}"
            ));
        }
        load_exam(&text).unwrap()
    }

    fn counts() -> DrawCounts {
        DrawCounts {
            binary: 14,
            probe_groups: 2,
            relevance: 2,
            ..DrawCounts::default()
        }
    }

    #[test]
    fn the_draw_is_a_function_of_the_seed() {
        let pool = pool();
        let a = draw_items(&pool, 42, &counts()).unwrap();
        assert_eq!(a, draw_items(&pool, 42, &counts()).unwrap());
        assert_eq!(a.len(), 16);
        assert_eq!(a.iter().collect::<HashSet<_>>().len(), 16, "no repeats");
        let others: HashSet<Vec<String>> = (0..20)
            .map(|seed| draw_items(&pool, seed, &counts()).unwrap())
            .collect();
        assert!(others.len() > 15, "seeds give different draws");
    }

    #[test]
    fn groups_come_whole_and_objective_first() {
        let pool = pool();
        let groups = pool.probe_groups().unwrap();
        for seed in 0..50 {
            let drawn = draw_items(&pool, seed, &counts()).unwrap();
            let set: HashSet<&str> = drawn.iter().map(String::as_str).collect();
            let mut whole = 0;
            for g in &groups {
                let inside = g.members().filter(|m| set.contains(m)).count();
                assert!(
                    inside == 0 || inside == 4,
                    "seed {seed}: group {} split",
                    g.id
                );
                if inside == 4 {
                    whole += 1;
                    assert!(
                        g.objective,
                        "seed {seed}: a non-objective group before objective ones"
                    );
                }
            }
            assert_eq!(whole, 2);
            // 14 binary = 8 in groups + 6 plain, of which the 4 objective come first.
            for i in 0..4 {
                assert!(set.contains(format!("b{i}").as_str()), "seed {seed}");
            }
            assert_eq!(drawn.iter().filter(|id| id.starts_with('b')).count(), 6);
            assert_eq!(drawn.iter().filter(|id| id.starts_with('r')).count(), 2);
        }
    }

    #[test]
    fn impossible_draws_are_refused() {
        let pool = pool();
        let too_many = DrawCounts {
            binary: 40,
            ..counts()
        };
        assert!(matches!(
            draw_items(&pool, 1, &too_many),
            Err(DrawError::NotEnough {
                requested: 32,
                available: 10,
                ..
            })
        ));
        let crowded = DrawCounts {
            binary: 6,
            ..counts()
        };
        assert!(matches!(
            draw_items(&pool, 1, &crowded),
            Err(DrawError::GroupsExceedBinary { group_items: 8, .. })
        ));
        let all = DrawCounts::all(&pool).unwrap();
        let mut everything = draw_items(&pool, 9, &all).unwrap();
        everything.sort();
        let mut ids: Vec<String> = pool.items.iter().map(|i| i.id.clone()).collect();
        ids.sort();
        assert_eq!(everything, ids);
    }

    #[test]
    fn presentation_is_recomputable_and_groups_flip_together() {
        let pool = pool();
        let base = pool.item("g0-base").unwrap();
        let swapped = pool.item("g0-order_swapped").unwrap();
        let mut flips = 0;
        for seed in 0..200u64 {
            assert_eq!(
                item_presentation(seed, base),
                item_presentation(seed, swapped),
                "a group's variants share one presentation"
            );
            assert_eq!(
                presentation(seed, "item:b1"),
                item_presentation(seed, pool.item("b1").unwrap())
            );
            flips += usize::from(item_presentation(seed, base).swapped);
        }
        // A fair coin over 200 seeds: 100 expected, sd about 7.
        assert!((60..=140).contains(&flips), "{flips}");
    }
}
