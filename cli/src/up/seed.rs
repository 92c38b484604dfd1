//! `panel up --seed`: the one number every choice the demo makes itself derives from.
//!
//! The demo chooses keys: each arbiter's (whose public key seeds that arbiter's exam draw),
//! each contributor's, the conveners' and the procedure roles'. Under a seed each is
//! derived from the seed and the key's name, so a second run with the same seed has the
//! same arbiters, sits the same exam draws and signs with the same keys. The simulated
//! judges' noise seeds are constants of the demo (`up::ARBITERS`), chosen so its story
//! holds, and so the same under every seed.
//!
//! The federation's Ed25519 keys derive from the seed too (`PkiPlan::key_seed`), and with
//! them the replicas' beacon keys, which draw every panel from what its question asks
//! (docs/SECURITY.md "The beacon"): the same seed seats the same panels and so repeats
//! the outcomes. What still differs between runs is not the demo's to choose and feeds no
//! draw: the TLS certificates, the free loopback ports, the leader's batch seeds, the
//! entries' timestamps and which requests share a batch (so log indices and motion ids).

use anyhow::Result;
use ed25519_dalek::{Signer, SigningKey};

/// Domain of the derivation: no other signature of the project signs these bytes.
const DOMAIN: &[u8] = b"crucible-panel/up-seed/v1\0";

/// The master secret's first 24 bytes; the seed fills the last 8.
const MASTER_TAG: &[u8; 24] = b"crucible-panel/upseed/v1";

/// The seed of one `panel up` run, given or picked.
#[derive(Debug, Clone)]
pub struct DemoSeed {
    value: u64,
    /// Signs the key names; derived from the seed alone.
    master: SigningKey,
}

impl DemoSeed {
    /// `--seed`, or a seed picked from the OS's randomness when none is given (printed, so
    /// the run can be replayed).
    pub fn new(given: Option<u64>) -> Result<DemoSeed> {
        let value = match given {
            Some(v) => v,
            None => {
                let bytes = panel_node::keyfile::random_32()?;
                let mut b = [0u8; 8];
                b.copy_from_slice(&bytes[..8]);
                // Below 2^53, so the seed reads the same wherever it is printed as JSON.
                u64::from_be_bytes(b) >> 11
            }
        };
        Ok(DemoSeed::from_value(value))
    }

    fn from_value(value: u64) -> DemoSeed {
        let mut secret = [0u8; 32];
        secret[..24].copy_from_slice(MASTER_TAG);
        secret[24..].copy_from_slice(&value.to_be_bytes());
        DemoSeed {
            value,
            master: SigningKey::from_bytes(&secret),
        }
    }

    pub fn value(&self) -> u64 {
        self.value
    }

    /// The demo's key called `name` (`arbiter/arb-north-a`, `contributor/ada`, ...): the
    /// two halves of the master key's deterministic ed25519 signature over the domain and
    /// the name, folded into 32 secret bytes.
    pub fn key(&self, name: &str) -> SigningKey {
        let mut msg = DOMAIN.to_vec();
        msg.extend_from_slice(name.as_bytes());
        let sig = self.master.sign(&msg).to_bytes();
        let mut secret = [0u8; 32];
        for (i, s) in secret.iter_mut().enumerate() {
            *s = sig[i] ^ sig[32 + i];
        }
        SigningKey::from_bytes(&secret)
    }
}

/// The summary's line naming the seed, to replay the run with.
pub fn replay_line(seed: u64) -> String {
    format!(
        "seed {seed}; replay with panel up --seed {seed} (it fixes the demo's keys, exam draws and panel draws, so the outcomes; ports, timestamps and motion ids still vary)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_gives_the_same_keys_and_another_seed_others() {
        let a = DemoSeed::from_value(123);
        let again = DemoSeed::from_value(123);
        let b = DemoSeed::from_value(124);
        let k = |s: &DemoSeed, n: &str| s.key(n).to_bytes();
        assert_eq!(
            k(&a, "arbiter/arb-north-a"),
            k(&again, "arbiter/arb-north-a")
        );
        assert_ne!(k(&a, "arbiter/arb-north-a"), k(&b, "arbiter/arb-north-a"));
        assert_ne!(k(&a, "arbiter/arb-north-a"), k(&a, "arbiter/arb-south-a"));
    }

    #[test]
    fn a_given_seed_is_kept_and_a_picked_one_is_printable() {
        assert_eq!(DemoSeed::new(Some(7)).expect("seed").value(), 7);
        let picked = DemoSeed::new(None).expect("OS randomness").value();
        assert!(picked < 1 << 53);
        assert!(replay_line(42).starts_with("seed 42; replay with panel up --seed 42"));
    }
}
