//! Circuit breakers (docs/SECURITY.md "Circuit breakers"; docs/WIRE.md "Circuit
//! breakers"): member organisations pause new motions, closings or verdicts everywhere at
//! once with one endorsed entry, and lift the pause the same way; an automatic breaker,
//! armed by such an entry, pauses new motions when the decisions it watches go wrong.
//!
//! A pause refuses the writes of its scope with a reason that names the pause, who set it
//! and how to lift it; reads keep working, and nothing already accepted changes. Like a
//! membership change, an order needs the endorsements of the larger of the charter's
//! `admission_threshold` and `floors.min_organisations` distinct member organisations
//! ([`crate::features::membership::required_endorsers`]), so no member pauses, or unpauses, the
//! federation alone.

use crate::log::refusal_code::RefusalCode;
use std::collections::BTreeSet;

use panel_proto::breaker_order::{
    AutoClaim, BreakerClaim, BreakerSignatureError, MAX_REASON_BYTES, verify_breaker,
};
use thiserror::Error;

use crate::features::endorsers::EndorsementError;
pub use crate::log::breaker_order::{AutoBreaker, BreakerOrder, MAX_WINDOW, MIN_WINDOW, Scope};
use crate::model::State;
pub use crate::model::breakers::{Breakers, Pause};

/// Why an order, or a write during a pause, is refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum BreakerError {
    #[error(
        "{scope} are paused federation-wide since log index {log_index} by {by}: {reason}; \
         reads keep working. Lift it with an order endorsed by {required} member \
         organisation(s): `panel org endorse-breaker --lift --scope {scope}` by each, then \
         `panel org breaker --lift --scope {scope} --endorsement ORG=SIG ...`"
    )]
    Paused {
        scope: &'static str,
        reason: String,
        by: String,
        log_index: u64,
        required: usize,
    },
    #[error("the group has no charter; an unchartered group has no organisations to pause it")]
    Unchartered,
    #[error(
        "seq is {seq}, but the next breaker order of this federation is {expected}; sign the \
         order again with seq {expected}"
    )]
    WrongSeq { seq: u64, expected: u64 },
    #[error("scopes is empty or repeats a scope; name each of motions, closings, verdicts once")]
    Scopes,
    #[error("reason is empty; say why the federation pauses or lifts")]
    NoReason,
    #[error("reason is {0} bytes long; at most {MAX_REASON_BYTES} are signed, say it shorter")]
    ReasonTooLong(usize),
    #[error(
        "automatic.window is {0}; it must be between {MIN_WINDOW} and {MAX_WINDOW} decided motions"
    )]
    Window(u32),
    #[error("automatic.max_deadlock_permille is {0}; it must be at most 1000")]
    Permille(u16),
    #[error(transparent)]
    Endorsement(#[from] EndorsementError<BreakerSignatureError>),
    #[error(transparent)]
    Charter(#[from] panel_federation::CharterError),
    #[error(
        "{found} distinct member organisation(s) endorse this breaker order ({endorsers}); it \
         needs {required} (the larger of the charter's admission_threshold and \
         floors.min_organisations): have more organisations sign it with `panel org \
         endorse-breaker`"
    )]
    TooFewEndorsers {
        endorsers: String,
        found: usize,
        required: usize,
    },
}

impl BreakerError {
    pub fn code(&self) -> RefusalCode {
        match self {
            BreakerError::Paused { .. } => RefusalCode::Paused,
            _ => RefusalCode::BreakerRefused,
        }
    }
}

/// The scopes as the signed bitmask, or `Scopes` when empty or repeated.
fn scope_bits(scopes: &[Scope]) -> Result<u8, BreakerError> {
    let set: BTreeSet<Scope> = scopes.iter().copied().collect();
    if set.is_empty() || set.len() != scopes.len() {
        return Err(BreakerError::Scopes);
    }
    Ok(set.iter().fold(0, |bits, s| bits | s.bit()))
}

/// The claim organisations sign for `order` under the charter with `digest`.
pub fn claim<'a>(
    digest: &'a [u8; 32],
    order: &'a BreakerOrder,
) -> Result<BreakerClaim<'a>, BreakerError> {
    Ok(BreakerClaim {
        charter_digest: digest,
        seq: order.seq,
        scopes: scope_bits(&order.scopes)?,
        pause: order.pause,
        reason: &order.reason,
        automatic: order.automatic.map(|a| AutoClaim {
            window: a.window,
            max_deadlock_permille: a.max_deadlock_permille,
            max_refused_rulings: a.max_refused_rulings,
            max_overturned: a.max_overturned,
            on_flagged: a.on_flagged,
        }),
    })
}

/// An organisation's endorsement of `order` under `charter` (`panel org
/// endorse-breaker`); the order's own endorsements are not signed.
pub fn endorse(
    charter: &panel_federation::Charter,
    order: &BreakerOrder,
    roster_key: &panel_proto::SigningKey,
) -> Result<crate::rules::hex_bytes::SignatureBytes, BreakerError> {
    let digest = charter.digest()?;
    let c = claim(&digest, order)?;
    panel_proto::breaker_order::sign_breaker(&c, roster_key)
        .map(crate::rules::hex_bytes::SignatureBytes::new)
        .map_err(|problem| {
            BreakerError::Endorsement(EndorsementError::Invalid {
                index: 0,
                by: "this organisation".into(),
                problem,
            })
        })
}

/// Checks an order against the charter; returns the distinct endorsing organisations.
pub fn check(state: &State, order: &BreakerOrder) -> Result<Vec<String>, BreakerError> {
    let charter = state.charter.as_ref().ok_or(BreakerError::Unchartered)?;
    let expected = state.breakers.orders + 1;
    if order.seq != expected {
        return Err(BreakerError::WrongSeq {
            seq: order.seq,
            expected,
        });
    }
    if order.reason.trim().is_empty() {
        return Err(BreakerError::NoReason);
    }
    if order.reason.len() > MAX_REASON_BYTES {
        return Err(BreakerError::ReasonTooLong(order.reason.len()));
    }
    if let Some(a) = order.automatic {
        if !(MIN_WINDOW..=MAX_WINDOW).contains(&a.window) {
            return Err(BreakerError::Window(a.window));
        }
        if a.max_deadlock_permille > 1000 {
            return Err(BreakerError::Permille(a.max_deadlock_permille));
        }
    }
    let digest = charter.digest()?;
    let c = claim(&digest, order)?;
    crate::features::endorsers::distinct_endorsers(state, &order.endorsements, |sig, by| {
        verify_breaker(&c, sig, by)
    })?;
    let endorsers: BTreeSet<String> = order.endorsements.iter().map(|e| e.by.clone()).collect();
    let required = required(state);
    if endorsers.len() < required {
        return Err(BreakerError::TooFewEndorsers {
            endorsers: endorsers.iter().cloned().collect::<Vec<_>>().join(", "),
            found: endorsers.len(),
            required,
        });
    }
    Ok(endorsers.into_iter().collect())
}

/// Organisations an order needs (the membership rule's count).
fn required(state: &State) -> usize {
    state.charter.as_ref().map_or(1, |c| {
        crate::features::membership::required_endorsers(
            c,
            crate::features::endorsers::organisations(state).count(),
        )
    })
}

/// Applies a checked order: pauses or lifts its scopes, and arms the automatic breaker
/// when it names one. Lifting `motions` also clears an automatic trip and its window.
pub fn record(state: &mut State, order: &BreakerOrder, by: Vec<String>, at: (u64, u64)) {
    let b = &mut state.breakers;
    b.orders = order.seq;
    for scope in &order.scopes {
        if order.pause {
            b.paused.insert(
                *scope,
                Pause {
                    reason: order.reason.clone(),
                    by: by.clone(),
                    log_index: at.0,
                    since_ms: at.1,
                },
            );
        } else {
            b.paused.remove(scope);
            if *scope == Scope::Motions {
                b.fresh_window();
            }
        }
    }
    if let Some(a) = order.automatic {
        b.automatic = Some(a);
        b.fresh_window();
    }
}

/// Refuses a write of `scope` while it is paused.
pub fn refuse_if_paused(state: &State, scope: Scope) -> Result<(), BreakerError> {
    match state.breakers.paused.get(&scope) {
        None => Ok(()),
        Some(p) => Err(BreakerError::Paused {
            scope: scope.name(),
            reason: p.reason.clone(),
            by: p.by.join(", "),
            log_index: p.log_index,
            required: required(state),
        }),
    }
}

/// Counts one decided motion in the automatic breaker's window; trips the breaker (pauses
/// new motions, naming the signal) when a signal passes its bound over a full window.
pub fn observe(state: &mut State, deadlocked: bool, refused_rulings: u32, at: (u64, u64)) {
    let b = &mut state.breakers;
    let Some(auto) = b.automatic else {
        return;
    };
    b.recent.push_back((deadlocked, refused_rulings));
    while b.recent.len() > auto.window as usize {
        b.recent.pop_front();
    }
    if auto.max_overturned.is_some() {
        b.overturns
            .push_back(std::mem::take(&mut b.pending_overturns));
        while b.overturns.len() > auto.window as usize {
            b.overturns.pop_front();
        }
    }
    if b.recent.len() < auto.window as usize {
        return;
    }
    let deadlocks = b.recent.iter().filter(|(d, _)| *d).count() as u64;
    let permille = deadlocks * 1000 / u64::from(auto.window);
    let refused: u64 = b.recent.iter().map(|(_, r)| u64::from(*r)).sum();
    let signal = if permille > u64::from(auto.max_deadlock_permille) {
        Some(format!(
            "automatic breaker: {deadlocks} of the last {} decided motions deadlocked ({}, above the armed bound of {})",
            auto.window,
            percent(permille),
            percent(u64::from(auto.max_deadlock_permille))
        ))
    } else if refused > u64::from(auto.max_refused_rulings) {
        Some(format!(
            "automatic breaker: {refused} rulings refused at the closes of the last {} decided motions (above the armed bound of {})",
            auto.window, auto.max_refused_rulings
        ))
    } else {
        None
    };
    trip(state, signal, at);
}

/// Counts an outcome overturned on appeal (`finality`); trips the breaker at once when the
/// overturns over the window pass the armed bound.
pub fn note_overturn(state: &mut State, motion_id: &str, at: (u64, u64)) {
    let b = &mut state.breakers;
    let Some((max, window)) = b
        .automatic
        .and_then(|a| a.max_overturned.map(|max| (max, a.window)))
    else {
        return;
    };
    b.pending_overturns = b.pending_overturns.saturating_add(1);
    let overturned: u64 =
        b.overturns.iter().map(|n| u64::from(*n)).sum::<u64>() + u64::from(b.pending_overturns);
    let signal = (overturned > u64::from(max)).then(|| {
        format!(
            "automatic breaker: {overturned} outcomes overturned on appeal over the last {window} decided motions, the latest {motion_id} (above the armed bound of {max})"
        )
    });
    trip(state, signal, at);
}

/// Trips the breaker armed with `on_flagged` when a prior check flags arbiters.
pub fn note_flagged(state: &mut State, flagged: &[String], at: (u64, u64)) {
    if flagged.is_empty() || !state.breakers.automatic.is_some_and(|a| a.on_flagged) {
        return;
    }
    let signal = format!(
        "automatic breaker: the prior check flagged {} (rulings their declared priors contradict); examine them (`panel arbiter show`) before lifting",
        flagged.join(", ")
    );
    trip(state, Some(signal), at);
}

/// Pauses new motions for `signal`, unless they are paused already.
fn trip(state: &mut State, signal: Option<String>, at: (u64, u64)) {
    let b = &mut state.breakers;
    let Some(reason) = signal else { return };
    if b.paused.contains_key(&Scope::Motions) {
        return;
    }
    b.paused.insert(
        Scope::Motions,
        Pause {
            reason,
            by: vec!["automatic breaker".into()],
            log_index: at.0,
            since_ms: at.1,
        },
    );
}

/// Thousandths as a percentage with one decimal, e.g. 625 -> "62.5%".
pub fn percent(permille: u64) -> String {
    format!("{}.{}%", permille / 10, permille % 10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{ClientCommand, ItemReply};
    use crate::features::charter_rules::tests::{charter, org_key};
    use crate::log::endorsement::Endorsement;

    fn write(s: &mut State, n: u64, c: ClientCommand) -> ItemReply<crate::reply::Reply> {
        crate::apply::write_one(s, n, c.into())
    }

    /// A chartered group (north, south; both must endorse) with two arbiters and a debate.
    fn chartered() -> State {
        let mut s = State {
            charter: Some(charter()),
            ..State::default()
        };
        let spec = serde_json::from_value(serde_json::json!({
            "resolution": "Resolved: shorter weeks raise output.", "pos_a": "yes", "pos_b": "no",
            "seats": 2, "min_per_stance": 1, "convener": "c",
            "policy": crate::rules::acceptance::Policy::default(),
        }))
        .expect("debate");
        let r = write(&mut s, 1, ClientCommand::CreateDebate(spec));
        assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
        s
    }

    fn order(seq: u64, scopes: &[Scope], pause: bool, by: &[u8]) -> BreakerOrder {
        let mut o = BreakerOrder {
            seq,
            scopes: scopes.to_vec(),
            pause,
            reason: "overturned outcomes under review".into(),
            automatic: None,
            endorsements: vec![],
        };
        let c = charter();
        o.endorsements = by
            .iter()
            .map(|i| Endorsement {
                by: c.organisations[*i as usize].name.clone(),
                signature: endorse(&c, &o, &org_key(*i)).expect("sign"),
            })
            .collect();
        o
    }

    fn refused(r: &ItemReply<crate::reply::Reply>, code: &str, needles: &[&str]) {
        let ItemReply::Refused { code: c, message } = r else {
            panic!("applied: {r:?}")
        };
        assert_eq!(c, code, "{message}");
        for n in needles {
            assert!(message.contains(n), "{n:?} not in {message}");
        }
    }

    fn ask(s: &mut State, n: u64) -> ItemReply<crate::reply::Reply> {
        let req = serde_json::from_value(serde_json::json!({
            "debate_id": "deb_1", "author": "x",
            "question": {"kind": "advance-phase", "from": "framing"},
        }))
        .expect("request");
        write(s, n, ClientCommand::AskPanel(req))
    }

    /// One organisation cannot pause (or lift) the federation alone, nor replay an order,
    /// nor sign in another's name.
    #[test]
    fn one_organisation_cannot_pause_or_lift_alone() {
        let mut s = chartered();
        let alone = write(
            &mut s,
            10,
            ClientCommand::SetBreaker(order(1, &[Scope::Motions], true, &[0])),
        );
        refused(
            &alone,
            "breaker_refused",
            &[
                "1 distinct member organisation",
                "needs 2",
                "endorse-breaker",
            ],
        );
        // Its own signature twice is still one organisation.
        let twice = write(
            &mut s,
            11,
            ClientCommand::SetBreaker(order(1, &[Scope::Motions], true, &[0, 0])),
        );
        refused(&twice, "breaker_refused", &["1 distinct"]);
        // Someone else's key in south's name.
        let mut forged = order(1, &[Scope::Motions], true, &[0, 1]);
        forged.endorsements[1].signature = endorse(&charter(), &forged, &org_key(0)).expect("sign");
        refused(
            &write(&mut s, 12, ClientCommand::SetBreaker(forged)),
            "breaker_refused",
            &["endorsements[1]", "does not verify"],
        );
        // An endorsement of one order cannot carry another (here: more scopes).
        let mut stretched = order(1, &[Scope::Motions], true, &[0, 1]);
        stretched.scopes.push(Scope::Closings);
        refused(
            &write(&mut s, 13, ClientCommand::SetBreaker(stretched)),
            "breaker_refused",
            &["does not verify"],
        );
        assert!(s.breakers.paused.is_empty());
        // Both: paused; the same order again is refused by its seq.
        let both = order(1, &[Scope::Motions], true, &[0, 1]);
        assert!(matches!(
            write(&mut s, 14, ClientCommand::SetBreaker(both.clone())),
            ItemReply::Applied(_)
        ));
        refused(
            &write(&mut s, 15, ClientCommand::SetBreaker(both)),
            "breaker_refused",
            &["next breaker order", "seq 2"],
        );
        // Lifting alone is refused too.
        refused(
            &write(
                &mut s,
                16,
                ClientCommand::SetBreaker(order(2, &[Scope::Motions], false, &[1])),
            ),
            "breaker_refused",
            &["needs 2"],
        );
        assert!(s.breakers.paused.contains_key(&Scope::Motions));
    }

    /// While new motions are paused a panel request is refused naming the pause, who set
    /// it and how to lift it, and a debate's own questions wait; lifting opens them.
    #[test]
    fn a_pause_refuses_its_writes_by_name_and_a_lift_reopens_what_waited() {
        let mut s = chartered();
        let r = write(
            &mut s,
            10,
            ClientCommand::SetBreaker(order(1, &[Scope::Motions, Scope::Verdicts], true, &[0, 1])),
        );
        assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
        let motions = s.motions.len();
        refused(
            &ask(&mut s, 11),
            "paused",
            &[
                "motions are paused",
                "north, south",
                "overturned outcomes",
                "--lift --scope motions",
            ],
        );
        refused(
            &write(
                &mut s,
                12,
                ClientCommand::ReissueVerdict {
                    debate_id: "deb_1".into(),
                    author: "x".into(),
                },
            ),
            "paused",
            &["verdicts are paused"],
        );
        assert_eq!(s.motions.len(), motions, "nothing opened while paused");
        let lift = write(
            &mut s,
            13,
            ClientCommand::SetBreaker(order(2, &[Scope::Motions], false, &[0, 1])),
        );
        assert!(matches!(lift, ItemReply::Applied(_)), "{lift:?}");
        assert!(
            s.breakers.paused.contains_key(&Scope::Verdicts),
            "only motions lifted"
        );
        // A request is no longer refused for the pause (the unadmitted pool may still
        // refuse the draw, which is not the breaker's).
        if let ItemReply::Refused { code, message } = ask(&mut s, 14) {
            assert_ne!(code, "paused", "{message}");
        }
    }

    /// The automatic breaker trips on a burst of deadlocks over a full window, says which
    /// signal tripped, and is lifted like any pause.
    #[test]
    fn the_automatic_breaker_trips_on_deadlocks_and_names_the_signal() {
        let mut s = chartered();
        arm(
            &mut s,
            1,
            AutoBreaker {
                window: 10,
                max_deadlock_permille: 500,
                max_refused_rulings: 100,
                max_overturned: None,
                on_flagged: false,
            },
        );
        for i in 0..9 {
            observe(&mut s, i % 3 != 0, 0, (20 + i, 0));
        }
        assert!(s.breakers.paused.is_empty(), "the window is not full yet");
        observe(&mut s, true, 0, (29, 0));
        let pause = s.breakers.paused.get(&Scope::Motions).expect("tripped");
        assert_eq!(pause.by, vec!["automatic breaker".to_string()]);
        assert!(
            pause
                .reason
                .contains("7 of the last 10 decided motions deadlocked (70.0%"),
            "{}",
            pause.reason
        );
        refused(&ask(&mut s, 30), "paused", &["automatic breaker", "70.0%"]);
        let lift = write(
            &mut s,
            31,
            ClientCommand::SetBreaker(order(2, &[Scope::Motions], false, &[0, 1])),
        );
        assert!(matches!(lift, ItemReply::Applied(_)), "{lift:?}");
        assert!(s.breakers.paused.is_empty());
        assert!(s.breakers.recent.is_empty(), "a lift starts a fresh window");
    }

    #[test]
    fn an_unchartered_group_and_bad_settings_are_refused_by_name() {
        let mut open = State::default();
        refused(
            &write(
                &mut open,
                1,
                ClientCommand::SetBreaker(order(1, &[Scope::Motions], true, &[])),
            ),
            "breaker_refused",
            &["no charter"],
        );
        let mut s = chartered();
        let mut o = order(1, &[Scope::Motions, Scope::Motions], true, &[]);
        refused(
            &write(&mut s, 2, ClientCommand::SetBreaker(o.clone())),
            "breaker_refused",
            &["repeats a scope"],
        );
        o.scopes = vec![Scope::Motions];
        o.reason = " ".into();
        refused(
            &write(&mut s, 3, ClientCommand::SetBreaker(o.clone())),
            "breaker_refused",
            &["reason is empty"],
        );
        o.reason = "x".repeat(MAX_REASON_BYTES + 1);
        refused(
            &write(&mut s, 5, ClientCommand::SetBreaker(o.clone())),
            "breaker_refused",
            &["1025 bytes long"],
        );
        o.reason = "r".into();
        o.automatic = Some(AutoBreaker {
            window: 5,
            max_deadlock_permille: 10,
            max_refused_rulings: 1,
            max_overturned: None,
            on_flagged: false,
        });
        refused(
            &write(&mut s, 4, ClientCommand::SetBreaker(o)),
            "breaker_refused",
            &["automatic.window is 5"],
        );
    }

    /// Arms the automatic breaker with `auto`, endorsed by both organisations.
    fn arm(s: &mut State, seq: u64, auto: AutoBreaker) {
        let mut o = order(seq, &[Scope::Closings], false, &[]);
        o.reason = "arm the automatic breaker".into();
        o.automatic = Some(auto);
        let c = charter();
        o.endorsements = (0..2u8)
            .map(|i| Endorsement {
                by: c.organisations[i as usize].name.clone(),
                signature: endorse(&c, &o, &org_key(i)).expect("sign"),
            })
            .collect();
        let r = write(s, 10 + seq, ClientCommand::SetBreaker(o));
        assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
    }

    const QUIET: AutoBreaker = AutoBreaker {
        window: 10,
        max_deadlock_permille: 1000,
        max_refused_rulings: 1000,
        max_overturned: Some(2),
        on_flagged: true,
    };

    /// A burst of overturned outcomes trips the breaker as soon as it passes the bound,
    /// naming the signal and the latest overturned motion; overturns older than the window
    /// stop counting.
    #[test]
    fn the_automatic_breaker_trips_on_overturned_outcomes() {
        let mut s = chartered();
        arm(&mut s, 1, QUIET);
        note_overturn(&mut s, "m1", (20, 0));
        for i in 0..11 {
            observe(&mut s, false, 0, (21 + i, 0));
        }
        // m1's overturn (counted with the first of these decisions) has left the window
        // of the last ten.
        note_overturn(&mut s, "m2", (40, 0));
        note_overturn(&mut s, "m3", (41, 0));
        assert!(
            s.breakers.paused.is_empty(),
            "two overturns are the bound, not above"
        );
        note_overturn(&mut s, "m4", (42, 0));
        let pause = s.breakers.paused.get(&Scope::Motions).expect("tripped");
        assert!(
            pause.reason.contains("3 outcomes overturned on appeal") && pause.reason.contains("m4"),
            "{}",
            pause.reason
        );
        refused(&ask(&mut s, 43), "paused", &["overturned on appeal"]);
    }

    /// A prior check that flags an arbiter trips a breaker armed for it and names them;
    /// one that flags nobody, or a breaker not armed for flags, leaves motions open.
    #[test]
    fn the_automatic_breaker_trips_on_a_flagged_arbiter() {
        let mut s = chartered();
        note_flagged(&mut s, &["arb-x".into()], (5, 0));
        assert!(s.breakers.paused.is_empty(), "no breaker is armed");
        arm(
            &mut s,
            1,
            AutoBreaker {
                on_flagged: false,
                ..QUIET
            },
        );
        note_flagged(&mut s, &["arb-x".into()], (15, 0));
        assert!(s.breakers.paused.is_empty(), "armed without the flag trip");
        arm(&mut s, 2, QUIET);
        note_flagged(&mut s, &[], (16, 0));
        assert!(s.breakers.paused.is_empty(), "nobody flagged");
        note_flagged(&mut s, &["arb-x".into(), "arb-y".into()], (17, 0));
        let pause = s.breakers.paused.get(&Scope::Motions).expect("tripped");
        assert!(
            pause.reason.contains("flagged arb-x, arb-y"),
            "{}",
            pause.reason
        );
    }
}
