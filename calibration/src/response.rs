//! The responses of `panel calibrate --jsonl` (docs/CALIBRATION.md, section 8), one JSON
//! object per answered line. Field order is the documented one: serde_json keeps it
//! (`preserve_order`), and clients that compare lines as text rely on it.

use serde::{Serialize, Serializer};

use crate::bridging::{BridgingFit, LossForm};
use crate::cooke::{Alpha, ClassicalResult};
use crate::request::RequestError;
use crate::scoring_rules::{BinaryReport, Murphy, MurphyBinned};

/// The answer to one request, written without a tag: the request kind is known from the
/// line it answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Response {
    Binary(BinaryResponse),
    CalibrationCounts(CalibrationCountsResponse),
    Cooke(CookeResponse),
    Bridging(BridgingResponse),
}

/// The answer to `binary`: [`BinaryReport`] with the short reliability table (no bin
/// edges; they follow from `bin` and the documented 10 equal bins).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinaryResponse {
    pub brier: f64,
    /// Exact log score in nats; `null` when a realised outcome got probability 0.
    pub log_loss: Option<f64>,
    pub murphy: Murphy,
    pub murphy_binned: MurphyBinned,
    pub ece: f64,
    pub reliability_table: Vec<ReliabilityRow>,
}

/// One bin of the reliability table; the means are `null` for an empty bin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReliabilityRow {
    pub bin: usize,
    pub count: usize,
    pub mean_forecast: Option<f64>,
    pub observed_frequency: Option<f64>,
}

impl From<BinaryReport> for BinaryResponse {
    fn from(r: BinaryReport) -> Self {
        BinaryResponse {
            brier: r.brier,
            log_loss: r.log_loss,
            murphy: r.murphy,
            murphy_binned: r.murphy_binned,
            ece: r.ece,
            reliability_table: r
                .reliability_table
                .into_iter()
                .map(|b| ReliabilityRow {
                    bin: b.bin,
                    count: b.count,
                    mean_forecast: b.mean_forecast,
                    observed_frequency: b.observed_frequency,
                })
                .collect(),
        }
    }
}

/// The answer to `calibration_counts`: Cooke's calibration score for 5/50/95.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationCountsResponse {
    pub calibration: f64,
}

/// The answer to `cooke`: per-expert scores, the normalised weights by expert id, the
/// decision maker's scores and the `α` used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CookeResponse {
    pub experts: Vec<CookeExpertScore>,
    /// `{expert id: weight}` in expert order; the weights sum to 1.
    #[serde(serialize_with = "as_object")]
    pub weights: Vec<(String, f64)>,
    pub dm: DecisionMakerScore,
    /// The chosen `α` when it was optimised, `null` when the request gave it.
    pub optimised_alpha: Option<f64>,
    pub alpha: f64,
}

/// One expert's line of the `cooke` answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CookeExpertScore {
    pub id: String,
    pub calibration: f64,
    pub information_seed: f64,
    pub information_all: f64,
    /// `C · I_seed · 1{C >= α}`, before normalisation.
    pub combined_score: f64,
}

/// The decision maker's scores in the `cooke` answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionMakerScore {
    pub calibration: f64,
    pub information_seed: f64,
    pub information_all: f64,
}

impl CookeResponse {
    /// `alpha` is the one the model was solved with, to tell optimised from given.
    pub fn new(result: &ClassicalResult, alpha: Alpha) -> Self {
        CookeResponse {
            experts: result
                .experts
                .iter()
                .zip(&result.combined_scores)
                .map(|(e, &combined_score)| CookeExpertScore {
                    id: e.id.clone(),
                    calibration: e.calibration,
                    information_seed: e.information_seed,
                    information_all: e.information_all,
                    combined_score,
                })
                .collect(),
            weights: result
                .experts
                .iter()
                .zip(&result.weights)
                .map(|(e, &w)| (e.id.clone(), w))
                .collect(),
            dm: DecisionMakerScore {
                calibration: result.dm.calibration,
                information_seed: result.dm.information_seed,
                information_all: result.dm.information_all,
            },
            optimised_alpha: matches!(alpha, Alpha::Optimised).then_some(result.alpha),
            alpha: result.alpha,
        }
    }
}

fn as_object<S: Serializer>(pairs: &[(String, f64)], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

/// The answer to `bridging`: [`BridgingFit`] with the loss form it minimised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BridgingResponse {
    /// Final value of the loss.
    pub loss: f64,
    pub mu: f64,
    pub rater_intercepts: Vec<f64>,
    pub rater_factors: Vec<f64>,
    pub item_intercepts: Vec<f64>,
    pub item_factors: Vec<f64>,
    pub loss_form: LossForm,
    pub sweeps: usize,
    /// `false` when the fit hit its sweep limit before the gradient test: the parameters are
    /// then not an optimum.
    pub converged: bool,
    /// Gradient norm at the returned parameters (sum units, docs/CALIBRATION.md section 5).
    /// Added after `converged` so that the earlier fields keep their order.
    pub gradient_norm: f64,
}

impl BridgingResponse {
    pub fn new(fit: BridgingFit, loss_form: LossForm) -> Self {
        BridgingResponse {
            loss: fit.loss,
            mu: fit.mu,
            rater_intercepts: fit.rater_intercepts,
            rater_factors: fit.rater_factors,
            item_intercepts: fit.item_intercepts,
            item_factors: fit.item_factors,
            loss_form,
            sweeps: fit.sweeps,
            converged: fit.converged,
            gradient_norm: fit.gradient_norm,
        }
    }
}

/// What a refused line gets: `{"error": "line N: <JSON path>: <problem and fix>"}`. The
/// same text goes to standard error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorResponse {
    pub error: String,
}

impl ErrorResponse {
    /// `line` is 1-based, counting blank lines.
    pub fn new(line: usize, error: &RequestError) -> Self {
        ErrorResponse {
            error: format!("line {line}: {error}"),
        }
    }
}
