//! Replay scripts: a debate built step by step from named writer calls, so another
//! implementation (or the reference engine) can run the same script and compare the
//! results and the document.
//!
//! Script: `{env: {clock: {start, step}, ids: "counter-per-prefix", mode?}, steps: [{op, args}]}`.
//! Each result is what the reference engine's function of that name returns, as JSON:
//! a refusal is `{code, message}` (only `code` is a contract; the messages are ours); a
//! writer that succeeds returns `null`; a constructor returns the object it created
//! (`newDebate` the debate, `addDefinition` the definition, `createThread` the thread,
//! `addVersion` the version, `fileChallenge` the challenge, `fileAppeal` the appeal,
//! `issueVerdict` the verdict) as it stood when it was returned, since a JSON result is
//! a snapshot where the reference hands back a live object; the queries `phasePrereq`
//! and `canAppeal` return `null` or a refusal. `setRelevance` (the host's assignment in
//! the reference) and `forcePhase` (ours) return `null` or a refusal too. [`ops`] lists
//! every op.
//!
//! `args` names the writer's parameters. A writer that takes a data object in the
//! reference (`newDebate(input)`, `addDefinition(def)`, `addVersion(debate, thread,
//! data)`, `fileChallenge(debate, data)`, `fileAppeal(debate, data)`, and the options of
//! `issueVerdict` and `concludeAppealReview`) reads that object's fields either directly
//! from `args` or from `args.data`. A key the op does not read, a field given in both
//! places, a missing data object or a value of the wrong type stops the replay with the
//! JSON path and the fix, so no part of a step is dropped silently.

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

/// The JSON type of a value, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `base.key`, or `base["key"]` when the key is not a plain name, so a path names the
/// key exactly.
fn key_path(base: &str, key: &str) -> String {
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{base}.{key}")
    } else {
        format!("{base}[{}]", Value::String(key.to_string()))
    }
}

/// Reads named arguments of one step, reporting bad ones by JSON path.
struct Args<'a> {
    map: Option<&'a Map<String, Value>>,
    path: String,
    /// Set on a data object the step left out although its writer requires one: the
    /// first read reports it, so the op's own arguments (read first) are checked first.
    absent: Option<ScriptError>,
}

impl<'a> Args<'a> {
    fn new(map: Option<&'a Map<String, Value>>, path: String) -> Self {
        Args {
            map,
            path,
            absent: None,
        }
    }

    fn at(&self, key: &str) -> String {
        key_path(&self.path, key)
    }

    fn get(&self, key: &str) -> Result<Option<&'a Value>, ScriptError> {
        if let Some(e) = &self.absent {
            return Err(e.clone());
        }
        Ok(self.map.and_then(|m| m.get(key)).filter(|v| !v.is_null()))
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>, ScriptError> {
        match self.get(key)? {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(bad(
                self.at(key),
                format!("expected a string or null, found {}", kind(v)),
            )),
        }
    }

    fn str(&self, key: &str) -> Result<String, ScriptError> {
        self.opt_str(key)?.ok_or_else(|| {
            bad(
                self.at(key),
                format!("required string is missing: add \"{key}\" to this object"),
            )
        })
    }

    fn opt_num(&self, key: &str) -> Result<Option<f64>, ScriptError> {
        match self.get(key)? {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(v) => Err(bad(
                self.at(key),
                format!("expected a number or null, found {}", kind(v)),
            )),
        }
    }

    /// A loosely typed number (the reference accepts anything; non-numbers act as
    /// missing).
    fn loose_num(&self, key: &str) -> Result<Option<f64>, ScriptError> {
        Ok(self.get(key)?.and_then(Value::as_f64))
    }

    fn bool(&self, key: &str) -> Result<bool, ScriptError> {
        match self.get(key)? {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(bad(
                self.at(key),
                format!("expected true or false, found {}", kind(v)),
            )),
        }
    }

    fn side(&self, key: &str) -> Result<Side, ScriptError> {
        let s = self.str(key)?;
        Side::parse(&s).ok_or_else(|| {
            bad(
                self.at(key),
                format!("expected \"A\" or \"B\", found {s:?}"),
            )
        })
    }

    fn citations(&self, key: &str) -> Result<Vec<Citation>, ScriptError> {
        match self.get(key)? {
            None => Ok(Vec::new()),
            Some(v @ Value::Array(_)) => serde_path_to_error::deserialize(v.clone()).map_err(|e| {
                bad(
                    format!("{}{}", self.at(key), suffix(e.path())),
                    e.inner().to_string(),
                )
            }),
            Some(v) => Err(bad(
                self.at(key),
                format!(
                    "expected an array of citations [{{source, url, tier}}], found {}",
                    kind(v)
                ),
            )),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, ScriptError> {
        match self.get(key)? {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        bad(
                            format!("{}[{i}]", self.at(key)),
                            format!("expected a string, found {}", kind(v)),
                        )
                    })
                })
                .collect(),
            Some(v) => Err(bad(
                self.at(key),
                format!("expected an array of strings, found {}", kind(v)),
            )),
        }
    }
}

/// The key under which a step may nest the data object of its writer.
const DATA: &str = "data";

/// What one op reads from its step's `args`: its own parameters and, for a writer that
/// takes a data object in the reference (`addVersion(debate, thread, data)`,
/// `fileChallenge(debate, data)`, ...), that object's fields. The fields go either
/// directly in `args` (flattened) or in `args.data` (nested), never both; any other key
/// is refused, so a misspelt or misplaced field cannot be dropped silently.
struct Shape {
    params: &'static [&'static str],
    data: &'static [&'static str],
    /// What the data object holds, for messages.
    what: &'static str,
    /// The reference writer has no default for its data object (it throws without one),
    /// so a step must carry it: nested (`"data": {}` for an empty one) or at least one
    /// field directly in `args`.
    required: bool,
}

const fn params(params: &'static [&'static str]) -> Shape {
    Shape {
        params,
        data: &[],
        what: "",
        required: false,
    }
}

/// Every op and its shape: the reference writers' parameters by name (the debate and
/// the looked-up thread, challenge or appeal objects become their ids). One table, so
/// [`ops`] (which conformance tests walk) and the ops a script may name cannot drift.
const SHAPES: &[(&str, Shape)] = &[
    (
        "newDebate",
        Shape {
            params: &[],
            data: &["resolution", "posA", "posB", "burden", "claimBudget"],
            what: "the debate's framing",
            // Scripts have always opened with a bare newDebate (an empty framing).
            required: false,
        },
    ),
    (
        "addDefinition",
        Shape {
            params: &[],
            data: &["term", "definition", "author", "side"],
            what: "the definition",
            required: true,
        },
    ),
    (
        "addVersion",
        Shape {
            params: &["threadId"],
            data: &[
                "parentId",
                "author",
                "side",
                "type",
                "assertion",
                "grounds",
                "warrant",
                "evidence",
                "qualifier",
                "relevance",
            ],
            what: "the version",
            required: true,
        },
    ),
    (
        "fileChallenge",
        Shape {
            params: &[],
            data: &[
                "threadId",
                "versionId",
                "ground",
                "text",
                "evidence",
                "author",
                "side",
            ],
            what: "the challenge",
            required: true,
        },
    ),
    (
        "fileAppeal",
        Shape {
            params: &[],
            data: &[
                "side",
                "author",
                "ground",
                "justification",
                "evidence",
                "targetThreadIds",
            ],
            what: "the appeal",
            required: true,
        },
    ),
    (
        "issueVerdict",
        Shape {
            params: &["viaAppealId"],
            data: &["actor", "rationale"],
            what: "the verdict options",
            required: false,
        },
    ),
    (
        "concludeAppealReview",
        Shape {
            params: &["actor"],
            data: &["rationale"],
            what: "the verdict options",
            required: false,
        },
    ),
    ("createThread", params(&["side", "title", "actor"])),
    (
        "mergeVersion",
        params(&["threadId", "versionId", "rationale", "actor"]),
    ),
    (
        "rejectVersion",
        params(&["threadId", "versionId", "rationale", "actor"]),
    ),
    (
        "verifyTier",
        params(&["threadId", "versionId", "citationIndex", "note", "actor"]),
    ),
    (
        "setRelevance",
        params(&["threadId", "versionId", "relevance"]),
    ),
    (
        "respondChallenge",
        params(&["challengeId", "text", "author", "side"]),
    ),
    (
        "resolveChallenge",
        params(&["challengeId", "resolution", "rationale", "actor"]),
    ),
    (
        "submitSteelman",
        params(&["ofSide", "text", "author", "side"]),
    ),
    ("certifySteelman", params(&["ofSide", "actor", "side"])),
    (
        "arbiterCertifySteelman",
        params(&["ofSide", "reason", "actor"]),
    ),
    (
        "returnSteelman",
        params(&["ofSide", "note", "actor", "side"]),
    ),
    ("advancePhase", params(&["actor"])),
    ("closeDebate", params(&["actor"])),
    ("forcePhase", params(&["phase", "actor"])),
    ("phasePrereq", params(&[])),
    ("canAppeal", params(&["side"])),
    (
        "decideAppeal",
        params(&["appealId", "admit", "rationale", "actor"]),
    ),
];

/// The shape of one op, `None` for a name no script may use.
fn shape(op: &str) -> Option<&'static Shape> {
    SHAPES.iter().find(|(name, _)| *name == op).map(|(_, s)| s)
}

/// Every op a replay script may name.
pub fn ops() -> impl Iterator<Item = &'static str> {
    SHAPES.iter().map(|(name, _)| *name)
}

impl Shape {
    /// Every key this op accepts in `args`, for messages.
    fn accepted(&self) -> String {
        let params: Vec<String> = self.params.iter().map(|k| format!("\"{k}\"")).collect();
        let data = format!(
            "the fields of {} ({}), directly in args or under \"{DATA}\"",
            self.what,
            self.data.join(", ")
        );
        match (params.is_empty(), self.data.is_empty()) {
            (true, true) => "no arguments".into(),
            (false, true) => params.join(", "),
            (true, false) => data,
            (false, false) => format!("{} and {data}", params.join(", ")),
        }
    }

    /// Splits a step's `args` into the op's own parameters and its data object, checking
    /// every key (see [`Shape`]).
    fn split<'a>(
        &self,
        op: &str,
        map: Option<&'a Map<String, Value>>,
        path: &str,
    ) -> Result<(Args<'a>, Args<'a>), ScriptError> {
        let args_path = format!("{path}.args");
        let nested = match map.and_then(|m| m.get(DATA)) {
            None | Some(Value::Null) => None,
            Some(Value::Object(d)) if !self.data.is_empty() => Some(d),
            Some(v) if !self.data.is_empty() => {
                return Err(bad(
                    key_path(&args_path, DATA),
                    format!(
                        "expected an object holding {} ({}), found {}",
                        self.what,
                        self.data.join(", "),
                        kind(v)
                    ),
                ));
            }
            Some(_) => {
                return Err(bad(
                    key_path(&args_path, DATA),
                    format!(
                        "{op} takes no data object; give its arguments directly in args ({})",
                        self.accepted()
                    ),
                ));
            }
        };
        for key in map.into_iter().flat_map(Map::keys) {
            if self.params.contains(&key.as_str()) || (key == DATA && nested.is_some()) {
                continue;
            }
            if self.data.contains(&key.as_str()) {
                if nested.is_some() {
                    return Err(bad(
                        key_path(&args_path, key),
                        format!(
                            "{} is given both under \"{DATA}\" and directly in args; move \"{key}\" into \"{DATA}\" (or give every field directly)",
                            self.what
                        ),
                    ));
                }
                continue;
            }
            if key == DATA {
                // `data: null`: no nested object, as for any other null argument.
                continue;
            }
            return Err(bad(
                key_path(&args_path, key),
                format!(
                    "{op} takes no argument \"{key}\"; it takes {}",
                    self.accepted()
                ),
            ));
        }
        if let Some(d) = nested {
            let data_path = key_path(&args_path, DATA);
            if let Some(key) = d.keys().find(|k| !self.data.contains(&k.as_str())) {
                let message = if self.params.contains(&key.as_str()) {
                    format!(
                        "\"{key}\" is an argument of {op}, not a field of {}: move it out of \"{DATA}\" into args",
                        self.what
                    )
                } else {
                    format!(
                        "{} has no field \"{key}\"; its fields are {}",
                        self.what,
                        self.data.join(", ")
                    )
                };
                return Err(bad(key_path(&data_path, key), message));
            }
        }
        let args = Args::new(map, args_path.clone());
        let mut data = match nested {
            Some(d) => Args::new(Some(d), key_path(&args_path, DATA)),
            None => Args::new(map, args_path.clone()),
        };
        if self.required
            && nested.is_none()
            && !map.is_some_and(|m| m.keys().any(|k| self.data.contains(&k.as_str())))
        {
            data.absent = Some(bad(
                key_path(&args_path, DATA),
                format!(
                    "{op} needs {}: give its fields ({}) under \"{DATA}\" or directly in args (\"{DATA}\": {{}} for an empty one)",
                    self.what,
                    self.data.join(", ")
                ),
            ));
        }
        Ok((args, data))
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

/// A refusal as the reference returns one: `{code, message}`.
fn refusal(r: Refusal) -> Value {
    json!({ "code": r.code.as_str(), "message": r.message })
}

/// A writer's answer: `null` on success, the refusal otherwise.
fn unit(r: Result<(), Refusal>) -> Value {
    match r {
        Ok(()) => Value::Null,
        Err(e) => refusal(e),
    }
}

/// A document part as JSON. Serialising the document's plain data types into a `Value`
/// cannot fail; `null` stands in should it ever.
fn object<T: serde::Serialize>(x: &T) -> Value {
    serde_json::to_value(x).unwrap_or(Value::Null)
}

/// A constructor's answer: the object it created, looked up in the document by the id
/// the engine returned, or the refusal. An id the document does not hold is a gap
/// between the engine and this module, reported rather than answered with `null`.
fn created<T: serde::Serialize>(
    d: &Debate,
    r: Result<String, Refusal>,
    find: impl for<'d> Fn(&'d Debate, &str) -> Option<&'d T>,
    path: &str,
) -> Result<Value, ScriptError> {
    match r {
        Ok(id) => find(d, &id).map(object).ok_or_else(|| {
            bad(
                format!("{path}.op"),
                format!("the engine created {id:?} but the document does not hold it"),
            )
        }),
        Err(e) => Ok(refusal(e)),
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
        let Some(shape) = shape(op) else {
            return Err(bad(
                format!("{path}.op"),
                format!(
                    "unknown op {op:?}; ops are the reference writers' names (newDebate, createThread, addVersion, mergeVersion, ...)"
                ),
            ));
        };
        let map = match st.get("args") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(v) => {
                return Err(bad(
                    format!("{path}.args"),
                    format!("expected an object of named arguments, found {}", kind(v)),
                ));
            }
        };
        let (args, data) = shape.split(op, map, &path)?;
        if op == "newDebate" {
            let d = p.new_debate(NewDebate {
                resolution: data.opt_str("resolution")?.unwrap_or_default(),
                pos_a: data.opt_str("posA")?.unwrap_or_default(),
                pos_b: data.opt_str("posB")?.unwrap_or_default(),
                burden: data.opt_str("burden")?,
                claim_budget: data.loose_num("claimBudget")?,
            });
            results.push(d.to_json());
            doc = Some(d);
            continue;
        }
        let Some(d) = doc.as_mut() else {
            return Err(bad(
                format!("{path}.op"),
                "the first step must be newDebate; there is no debate yet",
            ));
        };
        let r = apply(&mut p, d, op, &args, &data, &path)?;
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
    data: &Args<'_>,
    path: &str,
) -> Result<Value, ScriptError> {
    let actor = a.opt_str("actor")?;
    let actor = actor.as_deref();
    Ok(match op {
        "addDefinition" => {
            p.add_definition(
                d,
                Definition {
                    term: data.opt_str("term")?,
                    definition: data.opt_str("definition")?,
                    author: data.opt_str("author")?,
                    side: data.opt_str("side")?,
                },
            );
            d.definitions.last().map_or(Value::Null, object)
        }
        "createThread" => {
            let r = p.create_thread(
                d,
                a.opt_str("side")?.as_deref(),
                a.opt_str("title")?.as_deref(),
                actor,
            );
            created(d, r, Debate::thread, path)?
        }
        "addVersion" => {
            let thread_id = a.str("threadId")?;
            let r = p.add_version(
                d,
                &thread_id,
                VersionInput {
                    parent_id: data.opt_str("parentId")?,
                    author: data.opt_str("author")?,
                    side: data.opt_str("side")?,
                    kind: data.opt_str("type")?,
                    assertion: data.opt_str("assertion")?,
                    grounds: data.opt_str("grounds")?,
                    warrant: data.opt_str("warrant")?,
                    evidence: data.citations("evidence")?,
                    qualifier: data.opt_str("qualifier")?,
                    relevance: data.opt_num("relevance")?,
                },
            );
            created(
                d,
                r,
                |d: &Debate, id: &str| d.thread(&thread_id).and_then(|t| t.version(id)),
                path,
            )?
        }
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
        "fileChallenge" => {
            let r = p.file_challenge(
                d,
                ChallengeInput {
                    thread_id: data.str("threadId")?,
                    version_id: data.opt_str("versionId")?.unwrap_or_default(),
                    ground: data.opt_str("ground")?,
                    text: data.opt_str("text")?,
                    evidence: data.citations("evidence")?,
                    author: data.opt_str("author")?,
                    side: data.opt_str("side")?,
                },
            );
            created(d, r, Debate::challenge, path)?
        }
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
                data.opt_str("rationale")?.as_deref(),
                data.opt_str("actor")?.as_deref(),
            );
            match d.verdicts.last() {
                Some(v) if v.n == n => object(v),
                _ => {
                    return Err(bad(
                        format!("{path}.op"),
                        format!("the engine issued verdict {n} but the document does not hold it"),
                    ));
                }
            }
        }
        "phasePrereq" => unit(phase_prereq(d)),
        "canAppeal" => unit(can_appeal(d, &a.opt_str("side")?.unwrap_or_default())),
        "fileAppeal" => {
            let r = p.file_appeal(
                d,
                AppealInput {
                    side: data.opt_str("side")?,
                    author: data.opt_str("author")?,
                    ground: data.opt_str("ground")?,
                    justification: data.opt_str("justification")?,
                    evidence: data.citations("evidence")?,
                    target_thread_ids: data.strings("targetThreadIds")?,
                },
            );
            created(d, r, Debate::appeal, path)?
        }
        "decideAppeal" => unit(p.decide_appeal(
            d,
            &a.str("appealId")?,
            a.bool("admit")?,
            a.opt_str("rationale")?.as_deref(),
            actor,
        )),
        // A writer, not a constructor: like every writer of the reference engine it
        // returns null on success; the verdict it issued is read from the document.
        "concludeAppealReview" => unit(
            p.conclude_appeal_review(d, actor, data.opt_str("rationale")?.as_deref())
                .map(|_| ()),
        ),
        other => {
            // `shape` lists every op this match handles; reaching here is a gap between them.
            return Err(bad(
                format!("{path}.op"),
                format!("op {other:?} has no writer in this engine"),
            ));
        }
    })
}
