//! Typed errors for bad inputs. Every message says what is wrong and how to fix it, because
//! the CLI forwards them verbatim to the person who wrote the input.

use thiserror::Error;

/// A rejected input to one of the scoring functions.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CalibrationError {
    /// An input array that must hold at least one element was empty.
    #[error("`{what}` is empty: supply at least one value")]
    Empty { what: &'static str },

    /// Two arrays that are read pairwise have different lengths.
    #[error(
        "`{left}` has {left_len} values but `{right}` has {right_len}: give one value of each per item"
    )]
    LengthMismatch {
        left: &'static str,
        left_len: usize,
        right: &'static str,
        right_len: usize,
    },

    /// A probability outside [0, 1] (or not a number).
    #[error("{what}[{index}] = {value} is not a probability: use a number in [0, 1]")]
    ProbabilityOutOfRange {
        what: &'static str,
        index: usize,
        value: f64,
    },

    /// A binary outcome that is not 0 or 1.
    #[error("{what}[{index}] = {value} is not a binary outcome: use 0 or 1")]
    NotBinary {
        what: &'static str,
        index: usize,
        value: f64,
    },

    /// Quantile values that do not strictly increase with the quantile level.
    #[error(
        "quantiles of {owner} are not strictly increasing ({values:?}): give q5 < q50 < q95 (a \
         distinct value for every level)"
    )]
    NonMonotoneQuantiles { owner: String, values: Vec<f64> },

    /// Quantile levels that are not strictly increasing inside (0, 1).
    #[error("quantile levels {levels:?} must be strictly increasing and inside (0, 1)")]
    BadQuantileLevels { levels: Vec<f64> },

    /// A value that must be finite was NaN or infinite.
    #[error("{what} = {value} is not a finite number")]
    NotFinite { what: String, value: f64 },

    /// A value on a log scale that is not positive.
    #[error(
        "{what} = {value} is on a log scale and must be > 0: use a uniform scale or positive values"
    )]
    NotPositiveOnLogScale { what: String, value: f64 },

    /// A category index outside the declared number of categories.
    #[error("{what}[{index}] = {value} is not a category below {categories}")]
    CategoryOutOfRange {
        what: &'static str,
        index: usize,
        value: usize,
        categories: usize,
    },

    /// A parameter outside its documented domain.
    #[error("{what}: {reason}")]
    InvalidParameter { what: &'static str, reason: String },

    /// The input is well formed but carries no information for the statistic
    /// (for example Krippendorff's alpha with no pairable values).
    #[error("{what}: {reason}")]
    Degenerate { what: &'static str, reason: String },

    /// A Cooke's-model or bridging input refers to an item, expert or rater that does not
    /// exist, or lacks one.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
}

/// What a reference in a request gets wrong.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ReferenceError {
    #[error("item id `{0}` appears twice: give every item a distinct id")]
    DuplicateItem(String),
    #[error("expert id `{0}` appears twice: give every expert a distinct id")]
    DuplicateExpert(String),
    #[error("expert `{expert}` has {slots} answer slots for {items} items")]
    AnswerSlots {
        expert: String,
        slots: usize,
        items: usize,
    },
    #[error("{owner}: {values} quantile values for {levels} levels")]
    QuantileCount {
        owner: String,
        values: usize,
        levels: usize,
    },
    #[error(
        "rating {index} refers to rater {rater} / item {item} beyond {raters} raters / {items} \
         items"
    )]
    RatingOutOfRange {
        index: usize,
        rater: usize,
        item: usize,
        raters: usize,
        items: usize,
    },
}

/// Shorthand used across the crate.
pub type Result<T> = std::result::Result<T, CalibrationError>;
