//! Why a scenario cannot be simulated. Every error names the TOML key at fault and the fix,
//! so a scenario author can repair the file without reading the simulator
//! (docs/SIMULATION.md "Scenario format").

use thiserror::Error;

/// A scenario file that cannot be run.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ScenarioError {
    /// The text is not TOML of the scenario's shape (a wrong type, an unknown key, a missing
    /// required key). `key` is the dotted path serde reached, e.g. `group[2].accuracy`.
    #[error("scenario key `{key}`: {message}")]
    Parse { key: String, message: String },
    /// A value of the right type that the simulator cannot use.
    #[error("scenario key `{key}`: {problem}; {fix}")]
    Invalid {
        key: String,
        problem: String,
        fix: String,
    },
}

impl ScenarioError {
    pub(crate) fn invalid(key: impl Into<String>, problem: impl Into<String>, fix: &str) -> Self {
        ScenarioError::Invalid {
            key: key.into(),
            problem: problem.into(),
            fix: fix.to_owned(),
        }
    }

    /// The TOML key the error is about.
    pub fn key(&self) -> &str {
        match self {
            ScenarioError::Parse { key, .. } | ScenarioError::Invalid { key, .. } => key,
        }
    }
}
