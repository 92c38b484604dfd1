//! The federation charter (docs/ARCHITECTURE.md, "Charter"; docs/SECURITY.md): who the
//! organisations are and which keys and certificates speak for them. It is fixed at `init`
//! as the first record entry, so every replica and any offline verifier checks roles
//! against the same document; the transport pins replicas and operators by it.
//! Pure: no I/O (callers read the file).

pub mod beacon_key;
pub mod charter;
pub mod fingerprint;
pub mod motion_seal;
pub mod pool_seal;

pub use charter::{
    AppealCredits, CHARTER_VERSION, Charter, CharterError, ExamBar, ExamTerms, FinalPanel, Floors,
    LastWordAuthority, LogIdentity, OperatorEntry, Organisation, ReplicaEntry, Role, WitnessEntry,
};
pub use fingerprint::{Fingerprint, FingerprintError};
