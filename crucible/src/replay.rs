//! Replay scripts: a debate built step by step from named writer calls, so another
//! implementation (or the reference engine) can run the same script and compare the
//! results and the document.
//!
//! Script: `{env: {clock: {start, step}, ids: "counter-per-prefix", mode?}, steps: [{op, args}]}`.
//! Each result is `null`, an error code string, `{created: id}` or `{n}`.

use serde_json::{Map, Value, json};

use crate::appeal::{AppealInput, can_appeal};
use crate::challenge::ChallengeInput;
use crate::document::{Citation, Debate, Definition, Side};
use crate::env::FixedEnv;
use crate::error::Refusal;
use crate::model::{NewDebate, VersionInput};
use crate::phase::phase_prereq;
use crate::protocol::{Conformance, Protocol};

/// A script that could not be run: the JSON path of the bad part and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ScriptError {
    pub path: String,
    pub message: String,
}

fn bad(path: impl Into<String>, message: impl Into<String>) -> ScriptError {
    ScriptError {
        path: path.into(),
        message: message.into(),
    }
}

/// Reads named arguments of one step, reporting bad ones by JSON path.
struct Args<'a> {
    map: Option<&'a Map<String, Value>>,
    path: String,
}

impl<'a> Args<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.and_then(|m| m.get(key)).filter(|v| !v.is_null())
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>, ScriptError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(
                format!("{}.{key}", self.path),
                "expected a string or null",
            )),
        }
    }

    fn str(&self, key: &str) -> Result<String, ScriptError> {
        self.opt_str(key)?
            .ok_or_else(|| bad(format!("{}.{key}", self.path), "required string is missing"))
    }

    fn opt_num(&self, key: &str) -> Result<Option<f64>, ScriptError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(_) => Err(bad(
                format!("{}.{key}", self.path),
                "expected a number or null",
            )),
        }
    }

    /// A loosely typed number (the reference accepts anything; non-numbers act as
    /// missing).
    fn loose_num(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    fn bool(&self, key: &str) -> Result<bool, ScriptError> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(
                format!("{}.{key}", self.path),
                "expected true or false",
            )),
        }
    }

    fn side(&self, key: &str) -> Result<Side, ScriptError> {
        let s = self.str(key)?;
        Side::parse(&s)
            .ok_or_else(|| bad(format!("{}.{key}", self.path), "expected \"A\" or \"B\""))
    }

    fn citations(&self, key: &str) -> Result<Vec<Citation>, ScriptError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(v @ Value::Array(_)) => serde_path_to_error::deserialize(v.clone()).map_err(|e| {
                bad(
                    format!("{}.{key}{}", self.path, suffix(e.path())),
                    e.inner().to_string(),
                )
            }),
            Some(_) => Err(bad(
                format!("{}.{key}", self.path),
                "expected an array of citations {source, url, tier}",
            )),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, ScriptError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        bad(format!("{}.{key}[{i}]", self.path), "expected a string")
                    })
                })
                .collect(),
            Some(_) => Err(bad(
                format!("{}.{key}", self.path),
                "expected an array of strings",
            )),
        }
    }
}

fn suffix(p: &serde_path_to_error::Path) -> String {
    let s = p.to_string();
    if s == "." {
        String::new()
    } else if s.starts_with('[') {
        s
    } else {
        format!(".{s}")
    }
}

fn refusal(r: Refusal) -> Value {
    Value::String(r.code.as_str().to_string())
}

fn unit(r: Result<(), Refusal>) -> Value {
    match r {
        Ok(()) => Value::Null,
        Err(e) => refusal(e),
    }
}

fn created(r: Result<String, Refusal>) -> Value {
    match r {
        Ok(id) => json!({ "created": id }),
        Err(e) => refusal(e),
    }
}

/// The outcome of a replay: one result per step and the final document.
#[derive(Debug, Clone)]
pub struct Replay {
    pub results: Vec<Value>,
    pub document: Option<Debate>,
}

impl Replay {
    pub fn to_json(&self) -> Value {
        json!({
            "results": self.results,
            "document": self.document.as_ref().map_or(Value::Null, Debate::to_json),
        })
    }
}

/// Runs a replay script. `mode` in `env` selects `"reference"` (default: the reference
/// engine's writers exactly) or `"spec"` (every SPEC rule enforced).
pub fn run(script: &Value) -> Result<Replay, ScriptError> {
    let env = script.get("env");
    let clock = env.and_then(|e| e.get("clock"));
    let start = clock
        .and_then(|c| c.get("start"))
        .map(|v| {
            v.as_i64()
                .ok_or_else(|| bad("$.env.clock.start", "expected an integer"))
        })
        .transpose()?
        .unwrap_or(0);
    let step = clock
        .and_then(|c| c.get("step"))
        .map(|v| {
            v.as_i64()
                .ok_or_else(|| bad("$.env.clock.step", "expected an integer"))
        })
        .transpose()?
        .unwrap_or(1000);
    if let Some(ids) = env.and_then(|e| e.get("ids"))
        && ids != "counter-per-prefix"
    {
        return Err(bad(
            "$.env.ids",
            "only \"counter-per-prefix\" id generation is supported",
        ));
    }
    let mode = match env.and_then(|e| e.get("mode")).and_then(Value::as_str) {
        None | Some("reference") => Conformance::Reference,
        Some("spec") => Conformance::Spec,
        Some(_) => return Err(bad("$.env.mode", "expected \"reference\" or \"spec\"")),
    };
    let steps = script
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("$.steps", "expected an array of {op, args}"))?;
    let mut p = Protocol::with_mode(FixedEnv::new(start, step), mode);
    let mut doc: Option<Debate> = None;
    let mut results = Vec::with_capacity(steps.len());
    for (i, st) in steps.iter().enumerate() {
        let path = format!("$.steps[{i}]");
        let op = st
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("{path}.op"), "expected an op name string"))?;
        let args = Args {
            map: match st.get("args") {
                None | Some(Value::Null) => None,
                Some(Value::Object(m)) => Some(m),
                Some(_) => return Err(bad(format!("{path}.args"), "expected an object")),
            },
            path: format!("{path}.args"),
        };
        if op == "newDebate" {
            let d = p.new_debate(NewDebate {
                resolution: args.opt_str("resolution")?.unwrap_or_default(),
                pos_a: args.opt_str("posA")?.unwrap_or_default(),
                pos_b: args.opt_str("posB")?.unwrap_or_default(),
                burden: args.opt_str("burden")?,
                claim_budget: args.loose_num("claimBudget"),
            });
            results.push(json!({ "created": d.id }));
            doc = Some(d);
            continue;
        }
        let Some(d) = doc.as_mut() else {
            return Err(bad(
                format!("{path}.op"),
                "the first step must be newDebate; there is no debate yet",
            ));
        };
        let r = apply(&mut p, d, op, &args, &path)?;
        results.push(r);
    }
    Ok(Replay {
        results,
        document: doc,
    })
}

fn apply(
    p: &mut Protocol<FixedEnv>,
    d: &mut Debate,
    op: &str,
    a: &Args<'_>,
    path: &str,
) -> Result<Value, ScriptError> {
    let actor = a.opt_str("actor")?;
    let actor = actor.as_deref();
    Ok(match op {
        "addDefinition" => {
            p.add_definition(
                d,
                Definition {
                    term: a.opt_str("term")?,
                    definition: a.opt_str("definition")?,
                    author: a.opt_str("author")?,
                    side: a.opt_str("side")?,
                },
            );
            Value::Null
        }
        "createThread" => created(p.create_thread(
            d,
            a.opt_str("side")?.as_deref(),
            a.opt_str("title")?.as_deref(),
            actor,
        )),
        "addVersion" => created(p.add_version(
            d,
            &a.str("threadId")?,
            VersionInput {
                parent_id: a.opt_str("parentId")?,
                author: a.opt_str("author")?,
                side: a.opt_str("side")?,
                kind: a.opt_str("type")?,
                assertion: a.opt_str("assertion")?,
                grounds: a.opt_str("grounds")?,
                warrant: a.opt_str("warrant")?,
                evidence: a.citations("evidence")?,
                qualifier: a.opt_str("qualifier")?,
                relevance: a.opt_num("relevance")?,
            },
        )),
        "mergeVersion" => unit(p.merge_version(
            d,
            &a.str("threadId")?,
            &a.str("versionId")?,
            a.opt_str("rationale")?.as_deref(),
            actor,
        )),
        "rejectVersion" => unit(p.reject_version(
            d,
            &a.str("threadId")?,
            &a.str("versionId")?,
            a.opt_str("rationale")?.as_deref(),
            actor,
        )),
        "verifyTier" => {
            let idx = a
                .opt_num("citationIndex")?
                .filter(|x| x.fract() == 0.0)
                .map_or(-1, |x| x as i64);
            unit(p.verify_tier(
                d,
                &a.str("threadId")?,
                &a.str("versionId")?,
                idx,
                a.opt_str("note")?.as_deref(),
                actor,
            ))
        }
        "setRelevance" => unit(p.set_relevance(
            d,
            &a.str("threadId")?,
            &a.str("versionId")?,
            a.opt_num("relevance")?,
        )),
        "fileChallenge" => created(p.file_challenge(
            d,
            ChallengeInput {
                thread_id: a.str("threadId")?,
                version_id: a.opt_str("versionId")?.unwrap_or_default(),
                ground: a.opt_str("ground")?,
                text: a.opt_str("text")?,
                evidence: a.citations("evidence")?,
                author: a.opt_str("author")?,
                side: a.opt_str("side")?,
            },
        )),
        "respondChallenge" => unit(p.respond_challenge(
            d,
            &a.str("challengeId")?,
            a.opt_str("text")?.as_deref(),
            a.opt_str("author")?.as_deref(),
            a.opt_str("side")?.as_deref(),
        )),
        "resolveChallenge" => unit(p.resolve_challenge(
            d,
            &a.str("challengeId")?,
            &a.str("resolution")?,
            a.opt_str("rationale")?.as_deref(),
            actor,
        )),
        "submitSteelman" => unit(p.submit_steelman(
            d,
            a.side("ofSide")?,
            a.opt_str("text")?.as_deref(),
            a.opt_str("author")?.as_deref(),
            a.opt_str("side")?.as_deref(),
        )),
        "certifySteelman" => {
            unit(p.certify_steelman(d, a.side("ofSide")?, actor, a.opt_str("side")?.as_deref()))
        }
        "arbiterCertifySteelman" => unit(p.arbiter_certify_steelman(
            d,
            a.side("ofSide")?,
            a.opt_str("reason")?.as_deref(),
            actor,
        )),
        "returnSteelman" => unit(p.return_steelman(
            d,
            a.side("ofSide")?,
            a.opt_str("note")?.as_deref(),
            actor,
            a.opt_str("side")?.as_deref(),
        )),
        "advancePhase" => unit(p.advance_phase(d, actor)),
        "closeDebate" => unit(p.close_debate(d, actor)),
        "forcePhase" => unit(p.force_phase(d, &a.str("phase")?, actor)),
        "issueVerdict" => {
            let n = p.issue_verdict(
                d,
                a.opt_str("viaAppealId")?.as_deref(),
                a.opt_str("rationale")?.as_deref(),
                actor,
            );
            json!({ "n": n })
        }
        "phasePrereq" => unit(phase_prereq(d)),
        "canAppeal" => unit(can_appeal(d, &a.opt_str("side")?.unwrap_or_default())),
        "fileAppeal" => created(p.file_appeal(
            d,
            AppealInput {
                side: a.opt_str("side")?,
                author: a.opt_str("author")?,
                ground: a.opt_str("ground")?,
                justification: a.opt_str("justification")?,
                evidence: a.citations("evidence")?,
                target_thread_ids: a.strings("targetThreadIds")?,
            },
        )),
        "decideAppeal" => unit(p.decide_appeal(
            d,
            &a.str("appealId")?,
            a.bool("admit")?,
            a.opt_str("rationale")?.as_deref(),
            actor,
        )),
        "concludeAppealReview" => {
            match p.conclude_appeal_review(d, actor, a.opt_str("rationale")?.as_deref()) {
                Ok(n) => json!({ "n": n }),
                Err(e) => refusal(e),
            }
        }
        other => {
            return Err(bad(
                format!("{path}.op"),
                format!(
                    "unknown op {other:?}; ops are the reference writers' names (newDebate, createThread, addVersion, mergeVersion, ...)"
                ),
            ));
        }
    })
}
