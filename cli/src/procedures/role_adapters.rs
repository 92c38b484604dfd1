//! Role inputs from the roles' adapters (docs/PROCEDURES.md, "Advocates"): a roles file
//! names an adapter per role (`[defender]`, `[critic]`, `["advocate:ID"]`), each asked
//! once per awaited input with exactly what that role may see, its answer decoded as the
//! procedure's input. Or inputs written elsewhere, as a JSON array, submitted in order.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use panel_machine::RunRecord;
use panel_node::advocate::{AdvocateConfig, AdvocateTask};
use panel_procedures::{Awaited, Run, RunInput};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::procedures::{RoleSource, Scripted};

/// One role of a roles file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleEntry {
    adapter: AdvocateConfig,
}

/// Adapters by role name.
pub struct Adapters {
    roles: BTreeMap<String, RoleEntry>,
    file: String,
}

impl Adapters {
    pub fn load(path: &Path) -> Result<Adapters> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let roles = toml::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        Ok(Adapters {
            roles,
            file: path.display().to_string(),
        })
    }
}

const FALSIFY_INPUT_SCHEMA: &str = include_str!("../../../docs/schemas/falsify/input.schema.json");
const DOSSIER_INPUT_SCHEMA: &str = include_str!("../../../docs/schemas/dossier/input.schema.json");

/// What the awaited role may see: for a dossier advocate its brief (shared evidence, its
/// own material, at Clash II the bounded projection; never a sibling's output), for a
/// falsification role the claims and their buckets so far.
fn brief(run: &Run, role: &str) -> Result<(Value, &'static str)> {
    match run {
        Run::Dossier(d) => {
            let id = role.strip_prefix("advocate:").unwrap_or(role);
            Ok((serde_json::to_value(d.brief(id)?)?, DOSSIER_INPUT_SCHEMA))
        }
        Run::Falsify(f) => Ok((json!({ "claims": f.bucketing() }), FALSIFY_INPUT_SCHEMA)),
        Run::Crux(_) => Err(anyhow!(
            "a crux run takes its positions with the start document; it awaits no role input"
        )),
    }
}

/// One JSON input, as the run's procedure reads it.
pub fn decode(run: &Run, v: Value) -> Result<RunInput> {
    Ok(match run {
        Run::Falsify(_) => RunInput::Falsify(serde_json::from_value(v)?),
        Run::Dossier(_) => RunInput::Dossier(serde_json::from_value(v)?),
        Run::Crux(_) => RunInput::Crux(serde_json::from_value(v)?),
    })
}

impl RoleSource for Adapters {
    async fn next(&mut self, run: &RunRecord, awaiting: &[Awaited]) -> Result<Option<RunInput>> {
        let Some(a) = awaiting.first() else {
            return Ok(None);
        };
        let entry = self
            .roles
            .get(&a.role)
            .or_else(|| self.roles.get(a.role.split(':').next().unwrap_or_default()))
            .ok_or_else(|| {
                anyhow!(
                    "{} names no adapter for role [{}] (awaited: {}); add a [\"{}\".adapter] table",
                    self.file,
                    a.role,
                    a.what,
                    a.role
                )
            })?;
        let (input, schema) = brief(&run.run, &a.role)?;
        let task = AdvocateTask {
            role: a.role.clone(),
            instructions: a.what.clone(),
            input,
            schema: serde_json::from_str(schema)?,
        };
        let v = entry
            .adapter
            .write(&task)
            .await
            .with_context(|| format!("the {} adapter ({})", a.role, entry.adapter.kind()))?;
        decode(&run.run, v)
            .with_context(|| format!("the {} adapter's answer is not a valid input", a.role))
            .map(Some)
    }
}

/// Inputs written elsewhere: a JSON array of the procedure's inputs, in submission order.
pub fn written(path: &Path, wrap: impl Fn(Value) -> Result<RunInput>) -> Result<Scripted> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let items: Vec<Value> = panel_procedures::decode("inputs", &bytes)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let inputs = items
        .into_iter()
        .enumerate()
        .map(|(i, v)| wrap(v).with_context(|| format!("{}: input [{i}]", path.display())))
        .collect::<Result<VecDeque<_>>>()?;
    Ok(Scripted(inputs))
}

/// Either source, chosen by flags: `roles` (adapters to ask) or `inputs` (written
/// elsewhere, each JSON value made an input by `wrap`); `flags` names them for the error.
pub fn from_flags(
    roles: Option<&Path>,
    inputs: Option<&Path>,
    wrap: impl Fn(Value) -> Result<RunInput>,
    flags: &str,
) -> Result<Roles> {
    match (roles, inputs) {
        (Some(r), _) => Ok(Roles::Adapters(Adapters::load(r)?)),
        (None, Some(i)) => Ok(Roles::Written(written(i, wrap)?)),
        (None, None) => Err(anyhow!(
            "give the roles' inputs: {flags} FILE (adapters to ask) or --inputs FILE (written elsewhere)"
        )),
    }
}

/// Either source, chosen by flags.
pub enum Roles {
    Written(Scripted),
    Adapters(Adapters),
}

impl RoleSource for Roles {
    async fn next(&mut self, run: &RunRecord, awaiting: &[Awaited]) -> Result<Option<RunInput>> {
        match self {
            Roles::Written(s) => s.next(run, awaiting).await,
            Roles::Adapters(a) => a.next(run, awaiting).await,
        }
    }
}
