//! Opening a motion: the panel draw under the motion's policy (docs/coordinator/acceptance.md "The
//! panel draw"), and whether a panel could be seated now. Below the closing half
//! (`motions`), which the debate and run commands that open motions never call.

use crate::apply::error::{ApplyError, non_empty};
use crate::command::MotionSpec;
use crate::features::beacon::{BeaconError, Seating};
use crate::model::ApplyCtx;
use crate::model::{Motion, MotionStatus, State};
use crate::reply::{OpenMotionReply, Reply};
use crate::rules::acceptance::Seat;
use crate::rules::draw::{self, Candidate, DrawSpec};

pub(super) fn open_motion(
    state: &mut State,
    ctx: &ApplyCtx,
    spec: &MotionSpec,
) -> Result<Reply, ApplyError> {
    non_empty("motion_id", &spec.motion_id)?;
    non_empty("debate_id", &spec.debate_id)?;
    if spec.state_hash.hex_len() != 64 || spec.state_hash.bytes().is_err() {
        return Err(ApplyError::BadStateHash(spec.state_hash.to_hex()));
    }
    if state.motions.contains(&spec.motion_id) {
        return Err(ApplyError::MotionExists(spec.motion_id.clone()));
    }
    let (seats, draw_seed) = draw_seats(state, ctx, spec)?;
    // Under the beacon the draw above only proved a panel can be seated; the panel itself
    // is drawn by the `SeatMotion` that carries the replicas' shares (`beacon.rs`).
    let (seats, draw_seed, beacon) = if crate::features::beacon::applies(state, spec) {
        // The seating draws from the pool as it is now, whatever is admitted or declared
        // between this entry and the seating.
        let pool = candidates(state, spec)
            .into_iter()
            .filter(|c| c.admitted)
            .collect();
        (
            Vec::new(),
            0,
            Some(crate::features::beacon::open(state, spec, pool)?),
        )
    } else {
        if crate::features::declared_priors::governing_debate(state, spec).is_some() {
            crate::features::declared_priors::fix_standing(state, &spec.debate_id, &seats);
        }
        (seats, draw_seed, None)
    };
    let reply = Reply::from(OpenMotionReply {
        motion_id: spec.motion_id.clone(),
        seats: seats.clone(),
        draw_seed,
    });
    state.motions.insert(
        spec.motion_id.clone(),
        Motion {
            spec: spec.clone(),
            seats,
            draw_seed,
            opened_at_ms: ctx.time_ms,
            opened_log_index: ctx.log_index,
            status: MotionStatus::Open,
            rulings: Vec::new(),
            reveals: Vec::new(),
            decided_log_index: None,
            round: None,
            independence: None,
            effect_refused: None,
            confidence: None,
            finality: None,
            beacon,
            precedent: None,
            fresh_panel: None,
            last_word: None,
        },
    );
    Ok(reply)
}

/// `SeatMotion`: draws an unseated motion's panel from the beacon shares (`beacon.rs`),
/// over the pool as it stands now.
pub(super) fn seat_motion(state: &mut State, seating: &Seating) -> Result<Reply, ApplyError> {
    let awaiting = || BeaconError::NotAwaiting(seating.motion_id.clone());
    let motion = state.motions.get(&seating.motion_id).ok_or_else(awaiting)?;
    let draw = match (&motion.status, &motion.beacon) {
        (MotionStatus::Open, Some(b)) if b.pending() => b.clone(),
        _ => return Err(awaiting().into()),
    };
    let beacon_seed =
        crate::features::beacon::seed(state.charter.as_ref(), &draw, &seating.shares)?;
    let spec = motion.spec.clone();
    // The opening proved the pool can seat the panel, but the organisation swaps of the
    // draw are greedy, so a rare shuffle can miss a panel that exists: the next seeds of
    // the beacon's own sequence are tried, which nobody chooses either.
    let mut tries = crate::features::beacon::follow_on_seeds(beacon_seed)
        .map(|seed| draw_from(state, &spec, &draw.pool, seed).map(|seats| (seats, seed)));
    let first = tries
        .next()
        .unwrap_or_else(|| Err(BeaconError::NoShares.into()));
    let (seats, seed) = match first {
        Ok(drawn) => drawn,
        Err(e) => tries.find_map(Result::ok).ok_or(e)?,
    };
    if crate::features::declared_priors::governing_debate(state, &spec).is_some() {
        crate::features::declared_priors::fix_standing(state, &spec.debate_id, &seats);
    }
    if let Some(m) = state.motions.get_mut(&seating.motion_id) {
        m.seats = seats.clone();
        m.draw_seed = seed;
        m.beacon = Some(crate::features::beacon::BeaconDraw {
            shares: seating.shares.clone(),
            pool: Vec::new(),
            ..draw
        });
    }
    Ok(Reply::from(OpenMotionReply {
        motion_id: seating.motion_id.clone(),
        seats,
        draw_seed: seed,
    }))
}

/// Opens `spec`; when its panel is wider than `base_seats` and cannot be drawn, opens it
/// at `base_seats` instead (a panel widened after a deadlock or for escalation falls back
/// to the debate's or run's own size when the eligible pool is too small for it).
pub(super) fn open_widened(
    state: &mut State,
    ctx: &ApplyCtx,
    spec: &MotionSpec,
    base_seats: usize,
) -> Result<Reply, ApplyError> {
    open_laddered(state, ctx, spec, &[base_seats])
}

/// Opens `spec`, and where its panel cannot be drawn, at each smaller size of `fallbacks`
/// in turn (an appeal's 2n+1 panel, then N+2r, then the debate's N); the last refusal
/// when none can be drawn.
pub(super) fn open_laddered(
    state: &mut State,
    ctx: &ApplyCtx,
    spec: &MotionSpec,
    fallbacks: &[usize],
) -> Result<Reply, ApplyError> {
    let mut result = open_motion(state, ctx, spec);
    for &seats in fallbacks {
        if result.is_ok() {
            break;
        }
        if seats < spec.seats {
            let smaller = MotionSpec {
                seats,
                ..spec.clone()
            };
            result = open_motion(state, ctx, &smaller);
        }
    }
    result
}

/// The panel `spec` would seat now, and its draw seed; changes nothing.
fn draw_seats(
    state: &State,
    ctx: &ApplyCtx,
    spec: &MotionSpec,
) -> Result<(Vec<Seat>, u64), ApplyError> {
    let draw_seed = crate::features::draw_seed::for_motion(state, ctx, spec);
    Ok((draw_with_seed(state, spec, draw_seed)?, draw_seed))
}

/// The panel `spec` would seat now from `draw_seed`; changes nothing.
fn draw_with_seed(
    state: &State,
    spec: &MotionSpec,
    draw_seed: u64,
) -> Result<Vec<Seat>, ApplyError> {
    draw_from(state, spec, &candidates(state, spec), draw_seed)
}

/// The pool `spec`'s panel is drawn from now: every arbiter of an organisation in force
/// not related to an involved author, under the stance it is seated with for the motion's
/// debate.
fn candidates(state: &State, spec: &MotionSpec) -> Vec<Candidate> {
    // Under declared stances, the debate's declarations seat the stances and every
    // involved author's relatives stay off (`declared_priors`).
    let debate = crate::features::declared_priors::governing_debate(state, spec);
    let related_families = match (debate, &spec.question) {
        (Some(d), Some(q)) => d.involved_author_families(q),
        _ => Default::default(),
    };
    state
        .arbiters
        .iter()
        .filter(|(_, a)| !crate::features::declared_priors::related(a, &related_families))
        .filter(|(_, a)| {
            !crate::features::endorsers::is_removed(state, &a.registration.organisation)
        })
        .map(|(id, a)| Candidate {
            id: id.clone(),
            stance: debate
                .and_then(|d| crate::features::declared_priors::standing_for(state, id, d))
                .map_or_else(
                    || crate::features::declared_priors::seating_stance(id, a, debate),
                    |standing| standing.stance,
                ),
            organisation: a.registration.organisation.clone(),
            model_family: a.registration.model_family.clone(),
            admitted: a.admitted && !a.recalibration.is_flagged(),
        })
        .collect()
}

/// The panel drawn for `spec` from `pool` with `draw_seed`; changes nothing.
fn draw_from(
    state: &State,
    spec: &MotionSpec,
    pool: &[Candidate],
    draw_seed: u64,
) -> Result<Vec<Seat>, ApplyError> {
    let debate = crate::features::declared_priors::governing_debate(state, spec);
    let draw_spec = DrawSpec {
        seats: spec.seats,
        min_per_stance: spec.min_per_stance,
        min_organisations: crate::features::charter_rules::floors(state.charter.as_ref())
            .min_organisations
            .max(2),
        contributors: spec.contributors.iter().cloned().collect(),
        author_model_family: spec.author_model_family.clone(),
    };
    let mut panel = draw::draw(pool, &draw_spec, draw_seed).map_err(|e| match (e, debate) {
        // Under declared stances the usual cause is missing declarations: name them.
        (
            draw::DrawError::NotEnoughOfStance {
                stance,
                needed,
                available,
            },
            Some(d),
        ) => ApplyError::Undeclared {
            debate: spec.debate_id.clone(),
            stance,
            needed,
            available,
            declared: d.declared_stances.len(),
            undeclared: state
                .arbiters
                .iter()
                .filter(|(id, a)| {
                    a.admitted && a.revoked.is_none() && !d.declared_stances.contains_key(*id)
                })
                .map(|(id, _)| id.clone())
                .collect(),
        },
        (e, _) => ApplyError::Draw(e),
    })?;
    if spec
        .policy
        .as_ref()
        .is_some_and(|p| p.independence.measured_n_eff)
    {
        panel = draw::prefer_independent(panel, pool, &draw_spec, |a, b| {
            pair_correlation(state, a, b)
        });
    }
    let seats = panel
        .into_iter()
        .map(|c| {
            // Rule 4 counts the declared lineage where there is one (`lineage_key`).
            let lineage = state
                .arbiters
                .get(&c.id)
                .map_or(c.model_family, |a| a.registration.lineage_key().to_owned());
            Seat {
                arbiter_id: c.id,
                stance: c.stance,
                organisation: c.organisation,
                lineage: crate::rules::independence::seated_lineage(spec.policy.as_ref(), lineage),
            }
        })
        .collect();
    Ok(seats)
}

/// Two candidates' error correlation as the measured-independence rule counts it
/// (`ErrorHistory::rule_correlation`), each under its declared lineage.
fn pair_correlation(state: &State, a: &Candidate, b: &Candidate) -> f64 {
    fn lineage<'a>(state: &'a State, c: &'a Candidate) -> &'a str {
        state
            .arbiters
            .get(&c.id)
            .map_or(c.model_family.as_str(), |x| x.registration.lineage_key())
    }
    state
        .error_history
        .rule_correlation((&a.id, lineage(state, a)), (&b.id, lineage(state, b)))
        .0
}

/// Whether `spec` could be seated from the admitted pool now.
pub(super) fn can_seat(state: &State, ctx: &ApplyCtx, spec: &MotionSpec) -> bool {
    draw_seats(state, ctx, spec).is_ok()
}
