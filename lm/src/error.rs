//! Why a model could not be loaded or run. Each variant names the file or the key at fault.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum LmError {
    #[error("model file {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("model file {path} is not a readable GGUF file: {problem}")]
    NotGguf { path: PathBuf, problem: String },
    #[error(
        "GGUF metadata key `{key}` {problem} (the file may be truncated or not a language model)"
    )]
    Metadata { key: String, problem: String },
    #[error("architecture `{0}` is not supported by the local judge; supported: gemma3, qwen2")]
    Architecture(String),
    #[error("tokenizer kind `{0}` is not supported; supported: llama (SentencePiece), gpt2 (BPE)")]
    TokenizerKind(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("chat template: {0}")]
    Template(String),
    #[error("tensor `{name}`: {problem}")]
    Tensor { name: String, problem: String },
    #[error("inference: {0}")]
    Inference(#[from] candle_core::Error),
    #[error("prompt of {tokens} tokens exceeds the context of {context} tokens")]
    PromptTooLong { tokens: usize, context: usize },
    #[error("empty prompt: the model needs at least one token")]
    EmptyPrompt,
}
