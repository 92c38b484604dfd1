//! The scenario file: a world with known truth and the arbiter population judging it
//! (docs/SIMULATION.md "Scenario format"). Parsed from TOML with unknown keys refused, then
//! checked value by value, so every mistake comes back as one [`ScenarioError`] naming its
//! key and the fix.

use serde::{Deserialize, Serialize};

use crate::error::ScenarioError;

/// A whole scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Every random draw of the run derives from this seed.
    pub seed: u64,
    /// Motions simulated unless the caller overrides it.
    #[serde(default = "default_motions")]
    pub motions: usize,
    #[serde(default)]
    pub panel: PanelSpec,
    #[serde(default)]
    pub world: WorldSpec,
    #[serde(default)]
    pub analysis: AnalysisSpec,
    #[serde(default)]
    pub leader: Option<LeaderSpec>,
    #[serde(default)]
    pub family: Vec<FamilySpec>,
    pub group: Vec<GroupSpec>,
}

fn default_motions() -> usize {
    20_000
}

/// How panels are drawn (the `panel_machine::rules::draw::DrawSpec` fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PanelSpec {
    pub seats: usize,
    pub min_per_stance: usize,
    pub min_organisations: usize,
}

impl Default for PanelSpec {
    fn default() -> Self {
        Self {
            seats: 5,
            min_per_stance: 1,
            min_organisations: 2,
        }
    }
}

/// The motions: how truth and the presentation are drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorldSpec {
    /// Share of motions whose true answer is yes.
    pub base_rate: f64,
    /// Share of motions on which the two stances lean opposite ways (partisanship bites).
    pub contested_share: f64,
    /// Variance share of an error every arbiter shares on a motion (hard motions).
    pub shared_error: f64,
    /// Share of motions whose author is of one of the pool's lineages (else a human).
    pub author_family_share: f64,
    /// Share of those authors who declare their family, so the draw excludes it.
    pub author_declares_family: f64,
    /// Share of motions that are relevance motions (a step 1 to 4) instead of binary.
    pub relevance_share: f64,
}

impl Default for WorldSpec {
    fn default() -> Self {
        Self {
            base_rate: 0.5,
            contested_share: 0.5,
            shared_error: 0.0,
            author_family_share: 0.0,
            author_declares_family: 1.0,
            relevance_share: 0.0,
        }
    }
}

/// How the figures are computed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AnalysisSpec {
    /// Bootstrap resamples behind every 95% interval.
    pub bootstrap: usize,
    /// Motions per history window: the prior-consistency check runs on each window.
    pub history_motions: usize,
    /// How many windows the prior-consistency check runs on (each an independent trial).
    pub history_windows: usize,
    /// Motions per point of the panel-size and error-correlation sweeps.
    pub sweep_motions: usize,
    /// Panel sizes of the size sweep (each at least twice `min_per_stance`).
    pub sweep_seats: Vec<usize>,
    /// Within-lineage error correlations of the correlation sweep.
    pub sweep_correlations: Vec<f64>,
}

impl Default for AnalysisSpec {
    fn default() -> Self {
        Self {
            bootstrap: 200,
            history_motions: 400,
            history_windows: 10,
            sweep_motions: 3_000,
            sweep_seats: vec![3, 5, 7, 9],
            sweep_correlations: vec![0.0, 0.2, 0.4, 0.6, 0.8, 0.95],
        }
    }
}

/// A leader that re-rolls the batch draw seed until the panel suits a coalition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaderSpec {
    /// Seeds tried per motion under the old batch-seed draw.
    pub rerolls: usize,
    /// The coalition (a `group.coalition` name) whose seats the leader maximises.
    pub favours: String,
}

/// A lineage (provider, base model): arbiters of one family share part of their error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilySpec {
    pub name: String,
    /// Variance share of the error the family's members share on each motion.
    pub error_correlation: f64,
}

/// A declared stance as written in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StanceSpec {
    A,
    B,
    #[serde(rename = "none")]
    None,
}

/// What a colluding coalition rules for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    Yes,
    No,
    /// Against the truth, whatever it is (the strongest adversary).
    Wrong,
}

/// `count` arbiters with the same traits and faults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    pub name: String,
    #[serde(default = "one")]
    pub count: usize,
    /// Declared stance (what the draw and the acceptance rule see).
    pub stance: StanceSpec,
    /// The stance the arbiter actually leans to; defaults to the declared one.
    #[serde(default)]
    pub true_stance: Option<StanceSpec>,
    /// Organisation; `{i}` is replaced by the member's index, giving each its own.
    pub organisation: String,
    /// True lineage (a `family.name`), which decides shared errors.
    pub family: String,
    /// Declared lineage; defaults to `family`. A sybil may declare another.
    #[serde(default)]
    pub declared_family: Option<String>,
    /// Probability of a correct binary ruling without faults, in (0.5, 1).
    #[serde(default = "default_accuracy")]
    pub accuracy: f64,
    /// Multiplier of the calibrated log-odds: above 1 overconfident, below 1 timid.
    #[serde(default = "one_f")]
    pub confidence: f64,
    /// Pull toward whichever option is presented first (latent units).
    #[serde(default)]
    pub position_bias: f64,
    /// Pull toward the more verbose option.
    #[serde(default)]
    pub verbosity_bias: f64,
    /// Pull toward yes when the motion's author is of the arbiter's own family.
    #[serde(default)]
    pub self_family_preference: f64,
    /// Pull toward the own stance's side on contested motions.
    #[serde(default)]
    pub partisanship: f64,
    /// Gives the same relevance step whatever the motion (an inert factor).
    #[serde(default)]
    pub inert: bool,
    /// Members of one coalition name collude.
    #[serde(default)]
    pub coalition: Option<String>,
    /// What the coalition rules for; required with `coalition`.
    #[serde(default)]
    pub target: Option<Target>,
    /// Sybil registrations: members copy the rulings of this group's members.
    #[serde(default)]
    pub copies: Option<String>,
}

fn one() -> usize {
    1
}
fn one_f() -> f64 {
    1.0
}
fn default_accuracy() -> f64 {
    0.75
}

/// Parse and check a scenario.
pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    let de = toml::Deserializer::parse(text).map_err(|e| ScenarioError::Parse {
        key: "(file)".into(),
        message: e.message().to_owned(),
    })?;
    let scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        ScenarioError::Parse {
            key,
            message: e.into_inner().message().to_owned(),
        }
    })?;
    scenario.validate()?;
    Ok(scenario)
}

fn share(key: &str, v: f64) -> Result<(), ScenarioError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ScenarioError::invalid(
            key,
            format!("{v} is not a share"),
            "give a number from 0 to 1",
        ))
    }
}

impl Scenario {
    fn validate(&self) -> Result<(), ScenarioError> {
        if self.motions == 0 {
            return Err(ScenarioError::invalid(
                "motions",
                "0 motions",
                "simulate at least one motion",
            ));
        }
        self.validate_panel()?;
        self.validate_world()?;
        self.validate_analysis()?;
        self.validate_families()?;
        for (i, g) in self.group.iter().enumerate() {
            self.validate_group(i, g)?;
        }
        if self.group.is_empty() {
            return Err(ScenarioError::invalid(
                "group",
                "no arbiters",
                "add at least one [[group]] table",
            ));
        }
        self.validate_leader()
    }

    fn validate_panel(&self) -> Result<(), ScenarioError> {
        let p = &self.panel;
        if p.seats < 2 * p.min_per_stance.max(1) {
            return Err(ScenarioError::invalid(
                "panel.seats",
                format!(
                    "{} seats cannot reserve {} per stance",
                    p.seats, p.min_per_stance
                ),
                "ask for at least twice panel.min_per_stance seats (and at least 2)",
            ));
        }
        Ok(())
    }

    fn validate_world(&self) -> Result<(), ScenarioError> {
        let w = &self.world;
        share("world.base_rate", w.base_rate)?;
        share("world.contested_share", w.contested_share)?;
        share("world.shared_error", w.shared_error)?;
        share("world.author_family_share", w.author_family_share)?;
        share("world.author_declares_family", w.author_declares_family)?;
        share("world.relevance_share", w.relevance_share)
    }

    fn validate_analysis(&self) -> Result<(), ScenarioError> {
        let a = &self.analysis;
        if a.bootstrap < 20 {
            return Err(ScenarioError::invalid(
                "analysis.bootstrap",
                format!("{} resamples cannot give a 95% interval", a.bootstrap),
                "use at least 20 (200 is the default)",
            ));
        }
        if a.history_motions < 20 || a.history_windows == 0 {
            return Err(ScenarioError::invalid(
                "analysis.history_motions",
                "the history is too short to check priors",
                "use at least 20 history_motions and one history_windows",
            ));
        }
        for (i, &s) in a.sweep_seats.iter().enumerate() {
            if s < 2 * self.panel.min_per_stance.max(1) {
                return Err(ScenarioError::invalid(
                    format!("analysis.sweep_seats[{i}]"),
                    format!("{s} seats cannot reserve the stance minimum"),
                    "use sizes of at least twice panel.min_per_stance",
                ));
            }
        }
        for (i, &c) in a.sweep_correlations.iter().enumerate() {
            if !(0.0..1.0 - self.world.shared_error + 1e-12).contains(&c) {
                return Err(ScenarioError::invalid(
                    format!("analysis.sweep_correlations[{i}]"),
                    format!("{c} plus world.shared_error exceeds the whole error"),
                    "keep each value in [0, 1 - world.shared_error]",
                ));
            }
        }
        Ok(())
    }

    fn validate_families(&self) -> Result<(), ScenarioError> {
        for (i, f) in self.family.iter().enumerate() {
            let c = f.error_correlation;
            if !(0.0..=1.0 - self.world.shared_error + 1e-12).contains(&c) {
                return Err(ScenarioError::invalid(
                    format!("family[{i}].error_correlation"),
                    format!("{c} plus world.shared_error exceeds the whole error"),
                    "keep it in [0, 1 - world.shared_error]",
                ));
            }
            if self.family[..i].iter().any(|o| o.name == f.name) {
                return Err(ScenarioError::invalid(
                    format!("family[{i}].name"),
                    format!("family {:?} is declared twice", f.name),
                    "give every [[family]] a distinct name",
                ));
            }
        }
        Ok(())
    }

    fn validate_group(&self, i: usize, g: &GroupSpec) -> Result<(), ScenarioError> {
        let key = |field: &str| format!("group[{i}].{field}");
        if g.count == 0 {
            return Err(ScenarioError::invalid(
                key("count"),
                "an empty group",
                "give count at least 1 or remove the group",
            ));
        }
        if !(g.accuracy > 0.5 && g.accuracy < 1.0) {
            return Err(ScenarioError::invalid(
                key("accuracy"),
                format!("{} is outside (0.5, 1)", g.accuracy),
                "give the probability of a correct ruling, above 0.5 and below 1",
            ));
        }
        if !(g.confidence > 0.0 && g.confidence.is_finite()) {
            return Err(ScenarioError::invalid(
                key("confidence"),
                format!("{} is not a positive multiplier", g.confidence),
                "use 1.0 for a calibrated arbiter",
            ));
        }
        if !self.family.iter().any(|f| f.name == g.family) {
            return Err(ScenarioError::invalid(
                key("family"),
                format!("no [[family]] named {:?}", g.family),
                "declare the family in a [[family]] table or fix the name",
            ));
        }
        if self.group[..i].iter().any(|o| o.name == g.name) {
            return Err(ScenarioError::invalid(
                key("name"),
                format!("group {:?} is declared twice", g.name),
                "give every [[group]] a distinct name",
            ));
        }
        if g.coalition.is_some() != g.target.is_some() {
            return Err(ScenarioError::invalid(
                key("target"),
                "coalition and target go together",
                "give both coalition and target (yes, no or wrong), or neither",
            ));
        }
        if let Some(src) = &g.copies
            && !self
                .group
                .iter()
                .any(|o| &o.name == src && o.copies.is_none())
        {
            return Err(ScenarioError::invalid(
                key("copies"),
                format!("no original group named {src:?}"),
                "name a [[group]] that is not itself a copy",
            ));
        }
        Ok(())
    }

    fn validate_leader(&self) -> Result<(), ScenarioError> {
        let Some(l) = &self.leader else { return Ok(()) };
        if l.rerolls == 0 {
            return Err(ScenarioError::invalid(
                "leader.rerolls",
                "0 seeds tried",
                "give the number of seeds the leader tries, at least 1",
            ));
        }
        if !self
            .group
            .iter()
            .any(|g| g.coalition.as_deref() == Some(l.favours.as_str()))
        {
            return Err(ScenarioError::invalid(
                "leader.favours",
                format!("no group has coalition = {:?}", l.favours),
                "name a coalition some [[group]] belongs to",
            ));
        }
        Ok(())
    }
}
