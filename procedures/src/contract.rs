//! Decoding handoff documents at the edge: one typed value or an error naming the JSON
//! path and what was expected there, so a user can fix the file (docs/PROCEDURES.md,
//! "Contracts").

use serde::de::DeserializeOwned;

/// Why a handoff document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    /// The bytes are not the schema's JSON; `path` is where decoding stopped (`.` for the
    /// document itself).
    #[error("{what} at {path}: {problem}")]
    Malformed {
        what: &'static str,
        path: String,
        problem: String,
    },
    /// The JSON decoded but breaks a rule the schema states in words.
    #[error("{what} at {path}: {rule}")]
    Rule {
        what: &'static str,
        path: String,
        rule: String,
    },
}

/// Decodes `bytes` as a `T`, naming the JSON path of the first problem.
pub fn decode<T: DeserializeOwned>(what: &'static str, bytes: &[u8]) -> Result<T, ContractError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        ContractError::Malformed {
            what,
            path: if path.is_empty() { ".".into() } else { path },
            problem: e.into_inner().to_string(),
        }
    })
}
