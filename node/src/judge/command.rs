//! Command judge: runs an external program per motion. The motion goes to the program's
//! stdin as one JSON object (docs/WIRE.md "Judge JSON"); the program writes one answer
//! object to stdout and exits 0. The program is killed after `timeout`, stdout beyond
//! `max_output_bytes` is refused, and every kind of bad output gets its own error.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use futures::future::BoxFuture;
use panel_proto::pb::Motion;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::answer_json::{motion_json, parse_answer};
use super::{Judge, JudgeAnswer, JudgeError};

/// How the program is started and bounded.
#[derive(Debug, Clone)]
pub struct CommandJudge {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub timeout: Duration,
    pub max_output_bytes: usize,
    /// Pass the simulation truth hint through (for scripted stand-ins only).
    pub include_expected: bool,
}

impl CommandJudge {
    fn name(&self) -> String {
        self.program.display().to_string()
    }

    async fn run(&self, motion: &Motion) -> Result<JudgeAnswer, JudgeError> {
        let input = motion_json(motion, self.include_expected).to_string();
        let text = self.exchange(&input).await?;
        parse_answer(&text, motion)
    }

    fn no_pipe(&self, pipe: &'static str) -> JudgeError {
        JudgeError::NoPipe {
            program: self.name(),
            pipe,
        }
    }

    fn io(&self, source: std::io::Error) -> JudgeError {
        JudgeError::Io {
            program: self.name(),
            source,
        }
    }

    /// Runs the program once with `input` on stdin and returns its stdout, bounded in time
    /// and size; shared by judges and advocates (`crate::advocate`).
    pub async fn exchange(&self, input: &str) -> Result<String, JudgeError> {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| JudgeError::Spawn {
                program: self.name(),
                source,
            })?;
        let mut stdin = child.stdin.take().ok_or_else(|| self.no_pipe("stdin"))?;
        let mut stdout = child.stdout.take().ok_or_else(|| self.no_pipe("stdout"))?;
        let mut stderr = child.stderr.take().ok_or_else(|| self.no_pipe("stderr"))?;
        let limit = self.max_output_bytes;
        let work = async {
            // A program that never reads stdin must not block us: ignore a broken pipe.
            let _ = stdin.write_all(input.as_bytes()).await;
            drop(stdin);
            let mut out = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                let n = stdout
                    .read(&mut buf)
                    .await
                    .map_err(|source| self.io(source))?;
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
                if out.len() > limit {
                    return Err(JudgeError::OutputTooLarge {
                        program: self.name(),
                        limit,
                    });
                }
            }
            let mut err = Vec::new();
            let _ = (&mut stderr).take(4096).read_to_end(&mut err).await;
            let status = child.wait().await.map_err(|source| self.io(source))?;
            Ok((out, err, status))
        };
        let (out, err, status) = match tokio::time::timeout(self.timeout, work).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(JudgeError::Timeout {
                    program: self.name(),
                    timeout_ms: self.timeout.as_millis() as u64,
                });
            }
        };
        if !status.success() {
            return Err(JudgeError::ExitStatus {
                program: self.name(),
                status: status.to_string(),
                stderr: String::from_utf8_lossy(&err).trim().to_owned(),
            });
        }
        let text = String::from_utf8(out)
            .map_err(|_| JudgeError::BadAnswer("stdout is not UTF-8".into()))?;
        if text.trim().is_empty() {
            return Err(JudgeError::BadAnswer(
                "stdout is empty; the program must print one JSON answer object".into(),
            ));
        }
        Ok(text)
    }
}

impl Judge for CommandJudge {
    fn kind(&self) -> &'static str {
        "command"
    }
    fn decide<'a>(&'a self, motion: &'a Motion) -> BoxFuture<'a, Result<JudgeAnswer, JudgeError>> {
        Box::pin(self.run(motion))
    }
    fn model(&self) -> String {
        self.program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_proto::pb::{Decision, MotionKind};

    fn judge(script: &str) -> CommandJudge {
        CommandJudge {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            timeout: Duration::from_millis(2_000),
            max_output_bytes: 1024,
            include_expected: false,
        }
    }

    fn motion() -> Motion {
        Motion {
            motion_id: "m".into(),
            debate_id: "d".into(),
            kind: MotionKind::Merge as i32,
            state_hash: vec![0; 32],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn good_answer_is_parsed() {
        let j = judge(
            r#"cat >/dev/null; echo '{"decision":"accept","probability":0.7,"rationale":"ok"}'"#,
        );
        let a = j.decide(&motion()).await.unwrap();
        assert_eq!(a.decision, Decision::Accept);
        assert_eq!(a.probability, 0.7);
    }

    #[tokio::test]
    async fn the_program_sees_the_motion() {
        let j =
            judge(r#"grep -q '"kind":"merge"' && echo '{"decision":"REJECT","probability":0.1}'"#);
        assert_eq!(
            j.decide(&motion()).await.unwrap().decision,
            Decision::Reject
        );
    }

    #[tokio::test]
    async fn bad_outputs_get_precise_errors() {
        let cases: &[(&str, &str)] = &[
            ("echo 'not json'", "expected one JSON object"),
            (
                r#"echo '{"decision":"ACCEPT"}'"#,
                "missing field `probability`",
            ),
            (
                r#"echo '{"decision":"MAYBE","probability":0.5}'"#,
                "decision \"MAYBE\"",
            ),
            (
                r#"echo '{"decision":"UPHOLD","probability":0.5}'"#,
                "does not answer a merge motion",
            ),
            (
                r#"echo '{"decision":"ACCEPT","probability":2}'"#,
                "outside [0, 1]",
            ),
            (
                r#"echo '{"decision":"ACCEPT","probability":0.5,"vote":1}'"#,
                "unknown field `vote`",
            ),
            ("true", "stdout is empty"),
        ];
        for (script, want) in cases {
            let err = judge(script).decide(&motion()).await.unwrap_err();
            assert!(err.to_string().contains(want), "{script}: {err}");
        }
        let err = judge("echo oops >&2; exit 3")
            .decide(&motion())
            .await
            .unwrap_err();
        assert!(
            matches!(err, JudgeError::ExitStatus { ref stderr, .. } if stderr == "oops"),
            "{err}"
        );
        let err = judge("head -c 5000 /dev/zero | tr '\\0' x")
            .decide(&motion())
            .await
            .unwrap_err();
        assert!(matches!(err, JudgeError::OutputTooLarge { .. }), "{err}");
        let mut slow = judge("sleep 5");
        slow.timeout = Duration::from_millis(200);
        assert!(matches!(
            slow.decide(&motion()).await.unwrap_err(),
            JudgeError::Timeout { .. }
        ));
        let mut missing = judge("");
        missing.program = "/nonexistent/judge".into();
        assert!(matches!(
            missing.decide(&motion()).await.unwrap_err(),
            JudgeError::Spawn { .. }
        ));
    }
}
