//! Why a sharding simulation cannot run. Each refusal names the parameter, the value given
//! and what would be accepted, so the caller (the CLI, a test) can say how to fix it
//! without reading the model.

use thiserror::Error;

/// A parameter the model cannot use.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ShardsError {
    /// A value outside what the model accepts.
    #[error("sharding parameter `{parameter}` = {value}: expected {expected}")]
    Invalid {
        parameter: &'static str,
        value: String,
        expected: &'static str,
    },
    /// A sweep with nothing to sweep over.
    #[error("sharding sweep: `{parameter}` is empty; give at least one value")]
    EmptySweep { parameter: &'static str },
}

impl ShardsError {
    pub(crate) fn invalid(
        parameter: &'static str,
        value: impl ToString,
        expected: &'static str,
    ) -> Self {
        ShardsError::Invalid {
            parameter,
            value: value.to_string(),
            expected,
        }
    }

    /// The parameter the error is about.
    pub fn parameter(&self) -> &'static str {
        match self {
            ShardsError::Invalid { parameter, .. } | ShardsError::EmptySweep { parameter } => {
                parameter
            }
        }
    }
}
