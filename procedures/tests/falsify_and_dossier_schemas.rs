//! The JSON Schemas in docs/schemas/{falsify,dossier} describe what the code actually
//! reads and writes: every fixture and every serialised handoff validates, and the
//! schemas reject what the decoders reject. The validator below covers the keywords the
//! schemas use (no regex: `pattern` is not checked here; the code's own id rules are).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use panel_procedures::dossier::{self, DossierInput, DossierRun, FailStatus};
use panel_procedures::falsify::{self, FalsifyRun};
use panel_procedures::{
    PanelOutcome, PanelRuling, Prior, Procedure, ProcedureError, Settlement, StartContext,
};
use serde_json::Value;

struct Schemas {
    root: PathBuf,
    files: BTreeMap<PathBuf, Value>,
}

impl Schemas {
    fn load() -> Schemas {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schemas");
        let mut files = BTreeMap::new();
        for dir in ["falsify", "dossier"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = e.unwrap().path();
                let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                assert_eq!(
                    v["$schema"], "https://json-schema.org/draft/2020-12/schema",
                    "{p:?}"
                );
                files.insert(Path::new(dir).join(p.file_name().unwrap()), v);
            }
        }
        Schemas { root, files }
    }

    fn check(&self, file: &str, data: &Value) -> Result<(), String> {
        let f = PathBuf::from(file);
        self.validate(&f, &self.files[&f], data, "$")
    }

    fn resolve(&self, file: &Path, r: &str) -> (PathBuf, Value) {
        let (doc, pointer) = r.split_once('#').unwrap_or((r, ""));
        let target = if doc.is_empty() {
            file.to_path_buf()
        } else {
            let joined = file.parent().unwrap().join(doc);
            let mut out = PathBuf::new();
            for c in joined.components() {
                match c {
                    std::path::Component::ParentDir => {
                        out.pop();
                    }
                    other => out.push(other),
                }
            }
            out
        };
        let schema = self
            .files
            .get(&target)
            .unwrap_or_else(|| panic!("no schema {target:?} under {:?}", self.root));
        let v = if pointer.is_empty() {
            schema
        } else {
            schema
                .pointer(pointer)
                .unwrap_or_else(|| panic!("no {pointer} in {target:?}"))
        };
        (target, v.clone())
    }

    fn validate(&self, file: &Path, s: &Value, d: &Value, at: &str) -> Result<(), String> {
        if s == &Value::Bool(false) {
            return Err(format!("{at}: nothing allowed"));
        }
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let (f, t) = self.resolve(file, r);
            self.validate(&f, &t, d, at)?;
        }
        if let Some(t) = s.get("type") {
            let types: Vec<&str> = match t {
                Value::String(x) => vec![x.as_str()],
                Value::Array(xs) => xs.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            if !types.iter().any(|t| is_type(t, d)) {
                return Err(format!("{at}: expected {types:?}, got {d}"));
            }
        }
        if let Some(c) = s.get("const")
            && c != d
        {
            return Err(format!("{at}: expected {c}, got {d}"));
        }
        if let Some(Value::Array(e)) = s.get("enum")
            && !e.contains(d)
        {
            return Err(format!("{at}: {d} not in {e:?}"));
        }
        if let Some(Value::Array(alts)) = s.get("oneOf") {
            let ok: Vec<Result<(), String>> =
                alts.iter().map(|a| self.validate(file, a, d, at)).collect();
            let n = ok.iter().filter(|r| r.is_ok()).count();
            if n != 1 {
                return Err(format!(
                    "{at}: {n} oneOf alternatives match ({:?})",
                    ok.iter()
                        .filter_map(|r| r.as_ref().err())
                        .collect::<Vec<_>>()
                ));
            }
        }
        self.object(file, s, d, at)?;
        self.array(file, s, d, at)?;
        bounds(s, d, at)
    }

    fn object(&self, file: &Path, s: &Value, d: &Value, at: &str) -> Result<(), String> {
        let Value::Object(o) = d else { return Ok(()) };
        if let Some(Value::Array(req)) = s.get("required") {
            for r in req.iter().filter_map(Value::as_str) {
                if !o.contains_key(r) {
                    return Err(format!("{at}: missing required {r}"));
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (k, v) in o {
            let here = format!("{at}.{k}");
            match (props.and_then(|p| p.get(k)), s.get("additionalProperties")) {
                (Some(ps), _) => self.validate(file, ps, v, &here)?,
                (None, Some(Value::Bool(false))) => return Err(format!("{here}: not allowed")),
                (None, Some(extra @ Value::Object(_))) => self.validate(file, extra, v, &here)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn array(&self, file: &Path, s: &Value, d: &Value, at: &str) -> Result<(), String> {
        let Value::Array(xs) = d else { return Ok(()) };
        let prefix = s
            .get("prefixItems")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (i, x) in xs.iter().enumerate() {
            let here = format!("{at}[{i}]");
            match prefix.get(i) {
                Some(p) => self.validate(file, p, x, &here)?,
                None => {
                    if let Some(items) = s.get("items") {
                        self.validate(file, items, x, &here)?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn bounds(s: &Value, d: &Value, at: &str) -> Result<(), String> {
    let n = |k: &str| s.get(k).and_then(Value::as_u64);
    let len = match d {
        Value::Array(xs) => Some((xs.len() as u64, "minItems", "maxItems")),
        Value::String(t) => Some((t.chars().count() as u64, "minLength", "maxLength")),
        _ => None,
    };
    if let Some((l, lo, hi)) = len
        && (n(lo).is_some_and(|m| l < m) || n(hi).is_some_and(|m| l > m))
    {
        return Err(format!("{at}: length {l} outside {lo}/{hi}"));
    }
    if let Some(x) = d.as_i64()
        && (n("minimum").is_some_and(|m| x < m as i64)
            || n("maximum").is_some_and(|m| x > m as i64))
    {
        return Err(format!("{at}: {x} out of range"));
    }
    Ok(())
}

fn is_type(t: &str, d: &Value) -> bool {
    match t {
        "object" => d.is_object(),
        "array" => d.is_array(),
        "string" => d.is_string(),
        "integer" => d.is_i64() || d.is_u64(),
        "number" => d.is_number(),
        "boolean" => d.is_boolean(),
        "null" => d.is_null(),
        _ => false,
    }
}

fn json<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap()
}

fn ctx(simulation: bool) -> StartContext {
    StartContext {
        run_id: "run-s1".into(),
        seed: 3,
        simulation,
    }
}

fn scripted_settle<P: Procedure>(run: &mut P) {
    for q in run.pending() {
        let e = q.expected.clone().unwrap();
        let ruling = |id: &str, prior| PanelRuling {
            arbiter_id: id.into(),
            prior,
            organisation: "org".into(),
            model_family: None,
            yes: Some(e.yes),
            probability_milli: 600,
            rationale: e.rationale.clone(),
            presented: vec![],
        };
        run.settle(&Settlement {
            key: q.key.clone(),
            motion_id: "m".into(),
            outcome: if e.yes {
                PanelOutcome::Yes
            } else {
                PanelOutcome::No
            },
            rulings: vec![ruling("a", Prior::A), ruling("b", Prior::B)],
        })
        .unwrap();
    }
}

#[test]
fn falsify_fixtures_and_outputs_match_their_schemas() {
    let s = Schemas::load();
    let raw: Value =
        serde_json::from_str(include_str!("../src/falsify/fixtures/start.json")).unwrap();
    s.check("falsify/start.schema.json", &raw).unwrap();
    s.check("falsify/start.schema.json", &json(&falsify::demo_start()))
        .unwrap();
    let inputs = falsify::demo_inputs();
    for i in &inputs {
        s.check("falsify/input.schema.json", &json(i)).unwrap();
    }
    let mut run = FalsifyRun::start(falsify::demo_start(), &ctx(true)).unwrap();
    let mut queue = inputs.into_iter().peekable();
    for _ in 0..100 {
        while let Some(i) = queue.peek().cloned() {
            match run.submit(i) {
                Ok(()) => {
                    queue.next();
                }
                Err(ProcedureError::OutOfOrder { .. }) => break,
                Err(e) => panic!("{e}"),
            }
        }
        scripted_settle(&mut run);
    }
    assert!(run.finished());
    for b in run.bucketing() {
        s.check("falsify/bucketing.schema.json", &json(&b)).unwrap();
    }
}

#[test]
fn dossier_fixtures_and_outputs_match_their_schemas() {
    let s = Schemas::load();
    let raw: Value =
        serde_json::from_str(include_str!("../src/dossier/fixtures/start.json")).unwrap();
    s.check("dossier/start.schema.json", &raw).unwrap();
    s.check(
        "dossier/start.schema.json",
        &json(&dossier::demo_retry_start("run-0")),
    )
    .unwrap();
    let fail = DossierInput::Fail {
        advocate: "defer".into(),
        status: FailStatus::BudgetExhausted,
        note: "spent".into(),
    };
    for i in dossier::demo_inputs().iter().chain([&fail]) {
        s.check("dossier/input.schema.json", &json(i)).unwrap();
    }
    let mut run = DossierRun::start(dossier::demo_start(), &ctx(true)).unwrap();
    s.check(
        "dossier/brief.schema.json",
        &json(&run.brief("defer").unwrap()),
    )
    .unwrap();
    for i in dossier::demo_inputs().into_iter().take(6) {
        run.submit(i).unwrap();
    }
    s.check(
        "dossier/brief.schema.json",
        &json(&run.brief("defer").unwrap()),
    )
    .unwrap();
    for i in dossier::demo_inputs().into_iter().skip(6) {
        run.submit(i).unwrap();
    }
    scripted_settle(&mut run);
    assert!(run.finished());
    s.check("dossier/dossier.schema.json", &json(&run)).unwrap();
}

#[test]
fn the_schemas_reject_what_the_decoders_reject() {
    let s = Schemas::load();
    let mut raw: Value =
        serde_json::from_str(include_str!("../src/falsify/fixtures/start.json")).unwrap();
    raw["claims"][0]["txt"] = Value::from("typo");
    assert!(s.check("falsify/start.schema.json", &raw).is_err());
    assert!(falsify::FalsifyStart::from_json(raw.to_string().as_bytes()).is_err());
    let bad =
        serde_json::json!({"input": "commit", "claim": "c1", "critic": "k", "refuter": "vibes"});
    assert!(s.check("falsify/input.schema.json", &bad).is_err());
    let mut d: Value =
        serde_json::from_str(include_str!("../src/dossier/fixtures/start.json")).unwrap();
    d["framing"]["requested"] = Value::from("verdict");
    assert!(s.check("dossier/start.schema.json", &d).is_err());
    assert!(dossier::DossierStart::from_json(d.to_string().as_bytes()).is_err());
}
