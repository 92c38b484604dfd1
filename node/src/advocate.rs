//! Advocates: the roles of a procedure that write instead of judge (crux optimist and
//! pessimist, falsification defender and critic, dossier advocates; docs/PROCEDURES.md).
//! They go through the same adapters as judges: a scripted document, an external program
//! (task JSON on stdin, one JSON document on stdout) or an OpenAI-compatible endpoint.
//!
//! One pass, no retries (crux.txt: sending a weak position back "would mean the system is
//! coaching the debate"): a failed or timed-out advocate is a terminal status the run
//! records, never a second attempt.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::judge::JudgeError;
use crate::judge::command::CommandJudge;
use crate::judge::llm::{LlmJudge, LlmSettings};

/// What an advocate is asked: its role, the instructions, and exactly the input it may
/// see (the evidence pack and its side; never the other side's output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdvocateTask {
    pub role: String,
    pub instructions: String,
    pub input: Value,
    /// The JSON schema the answer must follow (passed to model endpoints).
    pub schema: Value,
}

/// How one advocate is reached, as `advocates.toml` declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum AdvocateConfig {
    /// A document written elsewhere, returned as is.
    Scripted { file: PathBuf },
    /// An external program.
    Command {
        program: PathBuf,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default = "default_timeout_ms")]
        timeout_ms: u64,
    },
    /// An OpenAI-compatible chat-completions endpoint; the key is read from the named
    /// environment variable, never from a flag or this file.
    Llm {
        base_url: String,
        model: String,
        #[serde(default)]
        api_key_env: Option<String>,
        #[serde(default = "default_timeout_ms")]
        timeout_ms: u64,
    },
}

fn default_timeout_ms() -> u64 {
    120_000
}

/// The largest advocate document accepted.
pub const MAX_ADVOCATE_OUTPUT_BYTES: usize = 256 * 1024;

const SYSTEM_PROMPT: &str = "You are an advocate in a structured decision procedure. Argue your \
assigned side as strongly as the evidence allows, using only the input you are given; you never \
see the other side. Answer with one JSON object that matches the given schema, and nothing else.";

/// Why an advocate produced nothing usable.
#[derive(Debug, thiserror::Error)]
pub enum AdvocateError {
    #[error("advocate document {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("advocate document {path} is not JSON: {source}")]
    NotJson {
        path: String,
        source: serde_json::Error,
    },
    #[error("advocate program output is not JSON: {0}")]
    OutputNotJson(serde_json::Error),
    #[error("environment variable {0} (the advocate's API key) is not set")]
    MissingKey(String),
    #[error(transparent)]
    Judge(#[from] JudgeError),
}

impl AdvocateConfig {
    /// Writes the advocate's document for `task`: one attempt.
    pub async fn write(&self, task: &AdvocateTask) -> Result<Value, AdvocateError> {
        match self {
            AdvocateConfig::Scripted { file } => {
                let path = file.display().to_string();
                let text = std::fs::read_to_string(file).map_err(|source| AdvocateError::Read {
                    path: path.clone(),
                    source,
                })?;
                serde_json::from_str(&text)
                    .map_err(|source| AdvocateError::NotJson { path, source })
            }
            AdvocateConfig::Command {
                program,
                args,
                timeout_ms,
            } => {
                let runner = CommandJudge {
                    program: program.clone(),
                    args: args.clone(),
                    timeout: Duration::from_millis(*timeout_ms),
                    max_output_bytes: MAX_ADVOCATE_OUTPUT_BYTES,
                    include_expected: false,
                };
                let input = json!({ "role": task.role, "instructions": task.instructions, "input": task.input });
                let out = runner.exchange(&input.to_string()).await?;
                serde_json::from_str(&out).map_err(AdvocateError::OutputNotJson)
            }
            AdvocateConfig::Llm {
                base_url,
                model,
                api_key_env,
                timeout_ms,
            } => {
                let api_key = match api_key_env {
                    Some(var) => Some(
                        std::env::var(var).map_err(|_| AdvocateError::MissingKey(var.clone()))?,
                    ),
                    None => None,
                };
                let llm = LlmJudge::new(LlmSettings {
                    base_url: base_url.clone(),
                    model: model.clone(),
                    api_key,
                    timeout: Duration::from_millis(*timeout_ms),
                    max_retries: 0,
                    backoff: Duration::ZERO,
                    roots: crate::http::TrustRoots::System,
                })?;
                let user = format!(
                    "Role: {}\n\n{}\n\nInput (JSON):\n{}",
                    task.role, task.instructions, task.input
                );
                Ok(llm
                    .complete_json(SYSTEM_PROMPT, user, task.schema.clone())
                    .await?)
            }
        }
    }

    /// The adapter kind, recorded with the advocate's output.
    pub fn kind(&self) -> &'static str {
        match self {
            AdvocateConfig::Scripted { .. } => "scripted",
            AdvocateConfig::Command { .. } => "command",
            AdvocateConfig::Llm { .. } => "llm",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> AdvocateTask {
        AdvocateTask {
            role: "optimist".into(),
            instructions: "Argue for.".into(),
            input: json!({"pack": {"items": []}}),
            schema: json!({"type": "object"}),
        }
    }

    /// A program advocate sees only the task (role, instructions, input) and its stdout
    /// is the document; a program printing something else is refused, not retried.
    #[tokio::test]
    async fn a_program_advocate_gets_the_task_and_bad_output_is_refused() {
        let echo = AdvocateConfig::Command {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "cat".into()],
            timeout_ms: 2_000,
        };
        let v = echo.write(&task()).await.unwrap();
        assert_eq!(v["role"], "optimist");
        assert_eq!(v["input"]["pack"]["items"], json!([]));
        assert!(v.get("schema").is_none());
        let junk = AdvocateConfig::Command {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "echo not json".into()],
            timeout_ms: 2_000,
        };
        assert!(matches!(
            junk.write(&task()).await,
            Err(AdvocateError::OutputNotJson(_))
        ));
        let slow = AdvocateConfig::Command {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "sleep 5".into()],
            timeout_ms: 200,
        };
        assert!(matches!(
            slow.write(&task()).await,
            Err(AdvocateError::Judge(JudgeError::Timeout { .. }))
        ));
    }

    /// A scripted advocate returns its file; a missing key variable is named.
    #[tokio::test]
    async fn scripted_documents_and_missing_keys() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.json");
        std::fs::write(&f, r#"{"side":"optimist"}"#).unwrap();
        let v = AdvocateConfig::Scripted { file: f }
            .write(&task())
            .await
            .unwrap();
        assert_eq!(v["side"], "optimist");
        let llm = AdvocateConfig::Llm {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key_env: Some("PANEL_TEST_UNSET_KEY_VAR".into()),
            timeout_ms: 100,
        };
        let e = llm.write(&task()).await.unwrap_err();
        assert!(e.to_string().contains("PANEL_TEST_UNSET_KEY_VAR"), "{e}");
    }
}
