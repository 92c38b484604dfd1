//! The commands that read files and need no cluster: verify an exported record or one
//! entry's proof, recompute a ledger, replay a script, check the Gate, score arbiters,
//! simulate verdict quality, and replay the paper's worked verdict.

pub(crate) mod calibrate;
pub(crate) mod demo;
pub(crate) mod gate;
pub(crate) mod ledger;
pub(crate) mod replay;
pub(crate) mod sim;
pub(crate) mod verify;
pub(crate) mod verify_proof;
