//! In-process language models for the local judge (docs/JUDGES.md "Local").
//!
//! A GGUF file is everything: the weights, the tokenizer (built here from its metadata for
//! both tokenizer kinds the shipped models use) and, where the model has one, its chat
//! template. The judge asks one thing of a model: the distribution of the next token after
//! a prompt ([`Model::next_token`]), from which it reads P(affirmative) by the answer
//! tokens' probabilities, not by parsing generated text; [`Model::generate`] writes the
//! short rationale.
//!
//! * [`gguf`]: the typed metadata of a file.
//! * [`tokenizer`]: SentencePiece BPE (`llama`, Gemma) and byte-level BPE (`gpt2`, Qwen).
//! * [`chat`]: the file's chat template, rendered; a plain prompt when there is none.
//! * [`decoder`]: one decoder-only transformer for Gemma 3 and Qwen 2 on candle's tensors
//!   and quantized kernels (why not candle's own modules: [`decoder`]).
//! * [`model`]: the three put together, loaded once, with a reusable prompt prefix.
//!
//! No I/O beyond reading the file at load; no network, no Python.

pub mod chat;
pub mod decoder;
mod error;
pub mod gguf;
pub mod model;
pub mod sampling;
pub mod tokenizer;

pub use decoder::{Cache, SlowFormats};
pub use error::LmError;
pub use gguf::Metadata;
pub use model::{LoadOptions, Model, NextToken};
pub use tokenizer::Tokenizer;
