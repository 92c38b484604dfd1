//! Circuit-breaker orders (docs/WIRE.md, "Circuit breakers"): member organisations pause
//! new motions, closings or verdicts federation-wide, or lift a pause, by an entry that
//! the charter's threshold of them sign with their roster keys (docs/SECURITY.md
//! "Circuit breakers"). The layout binds the federation's charter, a sequence number, the
//! scopes, the direction, the reason and the automatic breaker's settings, so an
//! endorsement of one order cannot be replayed as another or as the same order later.

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

use crate::keys::{KeyError, parse_signature};
use crate::signing::CanonicalWriter;

/// Domain tag of breaker-order canonical bytes, layout version 1.
pub const BREAKER_ORDER_TAG_V1: &[u8] = b"crucible-panel/breaker-order/v1\0";

/// The longest reason an order may give, in bytes: the signed text is never truncated.
pub const MAX_REASON_BYTES: usize = 1024;

/// Bits of [`BreakerClaim::scopes`].
pub const SCOPE_MOTIONS: u8 = 1;
pub const SCOPE_CLOSINGS: u8 = 2;
pub const SCOPE_VERDICTS: u8 = 4;

/// The automatic breaker's settings as an order sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoClaim {
    /// Decided motions the signals are counted over.
    pub window: u32,
    /// Deadlocks among them, in thousandths, above which new motions pause.
    pub max_deadlock_permille: u16,
    /// Rulings refused at closes among them (equivocations, commitments never revealed),
    /// above which new motions pause.
    pub max_refused_rulings: u32,
    /// Outcomes overturned on appeal while they were decided, above which new motions
    /// pause; `None` watches no overturns.
    pub max_overturned: Option<u32>,
    /// Whether a prior check that flags an arbiter (rulings its declared prior
    /// contradicts) pauses new motions.
    pub on_flagged: bool,
}

impl AutoClaim {
    /// Whether the order sets a signal added after layout v1's three (so its automatic
    /// block is written in the longer form).
    fn extended(&self) -> bool {
        self.max_overturned.is_some() || self.on_flagged
    }
}

/// What an order says, as organisations sign it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerClaim<'a> {
    /// SHA-256 of the adopted charter (its JSON), naming the federation.
    pub charter_digest: &'a [u8; 32],
    /// 1 for the first order under the charter, then one more each time.
    pub seq: u64,
    /// Which actions the order pauses or lifts: a non-empty union of the `SCOPE_*` bits.
    pub scopes: u8,
    /// `true` pauses, `false` lifts.
    pub pause: bool,
    pub reason: &'a str,
    /// The automatic breaker from this order on; `None` leaves it as it was.
    pub automatic: Option<AutoClaim>,
}

/// Why a signature over an order is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BreakerSignatureError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("scopes must name at least one of motions, closings, verdicts and nothing else")]
    Scopes,
    #[error("reason is longer than {MAX_REASON_BYTES} bytes; say it shorter")]
    ReasonTooLong,
    #[error("the signature does not verify over the breaker order's canonical bytes")]
    BadSignature,
}

/// Canonical bytes of an order.
pub fn breaker_canonical_bytes(c: &BreakerClaim<'_>) -> Result<Vec<u8>, BreakerSignatureError> {
    let all = SCOPE_MOTIONS | SCOPE_CLOSINGS | SCOPE_VERDICTS;
    if c.scopes == 0 || c.scopes & !all != 0 {
        return Err(BreakerSignatureError::Scopes);
    }
    if c.reason.len() > MAX_REASON_BYTES {
        return Err(BreakerSignatureError::ReasonTooLong);
    }
    let mut w = CanonicalWriter::new(BREAKER_ORDER_TAG_V1);
    w.fixed(c.charter_digest);
    w.u64(c.seq);
    w.u8(c.scopes);
    w.u8(u8::from(c.pause));
    w.text(c.reason);
    match c.automatic {
        None => w.u8(0),
        // Form 1 for the first three signals alone (orders signed before the others
        // existed keep their bytes), form 2 when an overturn bound or the flag trip is set.
        Some(a) => {
            w.u8(if a.extended() { 2 } else { 1 });
            w.u32(a.window);
            w.u32(u32::from(a.max_deadlock_permille));
            w.u32(a.max_refused_rulings);
            if a.extended() {
                w.u32(a.max_overturned.unwrap_or(u32::MAX));
                w.u8(u8::from(a.on_flagged));
            }
        }
    }
    Ok(w.finish())
}

/// An organisation's endorsement (64 bytes) of the order, by its roster key.
pub fn sign_breaker(
    c: &BreakerClaim<'_>,
    key: &SigningKey,
) -> Result<Vec<u8>, BreakerSignatureError> {
    Ok(key.sign(&breaker_canonical_bytes(c)?).to_bytes().to_vec())
}

/// Verifies one endorsement of the order strictly under `key`.
pub fn verify_breaker(
    c: &BreakerClaim<'_>,
    signature: &[u8],
    key: &VerifyingKey,
) -> Result<(), BreakerSignatureError> {
    let bytes = breaker_canonical_bytes(c)?;
    let sig = parse_signature(signature)?;
    key.verify_strict(&bytes, &sig)
        .map_err(|_| BreakerSignatureError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_binds_every_field_of_the_order() {
        let org = SigningKey::from_bytes(&[9; 32]);
        let claim = BreakerClaim {
            charter_digest: &[7; 32],
            seq: 1,
            scopes: SCOPE_MOTIONS,
            pause: true,
            reason: "overturned outcomes",
            automatic: None,
        };
        let sig = sign_breaker(&claim, &org).unwrap();
        assert!(verify_breaker(&claim, &sig, &org.verifying_key()).is_ok());
        let auto = AutoClaim {
            window: 50,
            max_deadlock_permille: 500,
            max_refused_rulings: 10,
            max_overturned: None,
            on_flagged: false,
        };
        for changed in [
            BreakerClaim {
                charter_digest: &[8; 32],
                ..claim
            },
            BreakerClaim { seq: 2, ..claim },
            BreakerClaim {
                scopes: SCOPE_MOTIONS | SCOPE_CLOSINGS,
                ..claim
            },
            BreakerClaim {
                pause: false,
                ..claim
            },
            BreakerClaim {
                reason: "other",
                ..claim
            },
            BreakerClaim {
                automatic: Some(auto),
                ..claim
            },
        ] {
            assert_eq!(
                verify_breaker(&changed, &sig, &org.verifying_key()),
                Err(BreakerSignatureError::BadSignature)
            );
        }
        let stranger = SigningKey::from_bytes(&[4; 32]).verifying_key();
        assert!(verify_breaker(&claim, &sig, &stranger).is_err());
        let long = "x".repeat(MAX_REASON_BYTES + 1);
        assert_eq!(
            breaker_canonical_bytes(&BreakerClaim {
                reason: &long,
                ..claim
            }),
            Err(BreakerSignatureError::ReasonTooLong)
        );
        for scopes in [0, 8, SCOPE_MOTIONS | 16] {
            assert_eq!(
                breaker_canonical_bytes(&BreakerClaim { scopes, ..claim }),
                Err(BreakerSignatureError::Scopes)
            );
        }
    }

    /// The later signals are signed too, and an order without them keeps layout v1's
    /// bytes (form 1), so endorsements made before them still verify.
    #[test]
    fn the_overturn_and_flag_signals_are_bound_and_old_orders_keep_their_bytes() {
        let org = SigningKey::from_bytes(&[9; 32]);
        let base = AutoClaim {
            window: 50,
            max_deadlock_permille: 500,
            max_refused_rulings: 10,
            max_overturned: None,
            on_flagged: false,
        };
        let claim = |a: AutoClaim| BreakerClaim {
            charter_digest: &[7; 32],
            seq: 3,
            scopes: SCOPE_MOTIONS,
            pause: false,
            reason: "arm",
            automatic: Some(a),
        };
        let v1 = breaker_canonical_bytes(&claim(base)).unwrap();
        let mut want = CanonicalWriter::new(BREAKER_ORDER_TAG_V1);
        want.fixed(&[7; 32]);
        want.u64(3);
        want.u8(SCOPE_MOTIONS);
        want.u8(0);
        want.text("arm");
        want.u8(1);
        want.u32(50);
        want.u32(500);
        want.u32(10);
        assert_eq!(v1, want.finish());
        let armed = AutoClaim {
            max_overturned: Some(2),
            on_flagged: true,
            ..base
        };
        let sig = sign_breaker(&claim(armed), &org).unwrap();
        assert!(verify_breaker(&claim(armed), &sig, &org.verifying_key()).is_ok());
        for changed in [
            base,
            AutoClaim {
                max_overturned: Some(3),
                ..armed
            },
            AutoClaim {
                on_flagged: false,
                ..armed
            },
        ] {
            assert_eq!(
                verify_breaker(&claim(changed), &sig, &org.verifying_key()),
                Err(BreakerSignatureError::BadSignature)
            );
        }
    }
}
