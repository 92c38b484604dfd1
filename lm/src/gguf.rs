//! The typed metadata of a GGUF file: read once at load, so nothing else looks up a key.

use candle_core::quantized::gguf_file::{Content, Value};

use crate::LmError;

/// What the loader and the tokenizer need to know of a file.
#[derive(Debug, Clone)]
pub struct Metadata {
    /// `general.architecture` (`gemma3`, `qwen2`).
    pub architecture: String,
    /// `general.name`, e.g. "Gemma 3 270m" (what a ruling's provenance names).
    pub name: String,
    /// `general.size_label`, e.g. "270M", empty when absent.
    pub size_label: String,
    /// `general.finetune` (e.g. "Instruct"), empty for a base model.
    pub finetune: String,
    /// `{arch}.context_length`.
    pub context_length: usize,
    pub tokenizer: TokenizerMetadata,
    /// `tokenizer.chat_template`, if the file carries one.
    pub chat_template: Option<String>,
}

/// `tokenizer.ggml.*`.
#[derive(Debug, Clone)]
pub struct TokenizerMetadata {
    /// `tokenizer.ggml.model`: `llama` or `gpt2`.
    pub kind: String,
    pub tokens: Vec<String>,
    /// Merge ranks as scores (SentencePiece BPE); empty for `gpt2`.
    pub scores: Vec<f32>,
    /// Token types (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte).
    pub types: Vec<i32>,
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    pub add_bos: bool,
    pub add_space_prefix: bool,
}

pub(crate) fn get<'a>(ct: &'a Content, key: &str) -> Result<&'a Value, LmError> {
    ct.metadata.get(key).ok_or_else(|| LmError::Metadata {
        key: key.into(),
        problem: "is missing".into(),
    })
}

fn bad(key: &str, e: candle_core::Error) -> LmError {
    LmError::Metadata {
        key: key.into(),
        problem: format!("has the wrong type: {e}"),
    }
}

pub(crate) fn string(ct: &Content, key: &str) -> Result<String, LmError> {
    get(ct, key)?.to_string().cloned().map_err(|e| bad(key, e))
}

fn string_or_empty(ct: &Content, key: &str) -> String {
    string(ct, key).unwrap_or_default()
}

/// An unsigned integer of any width.
pub(crate) fn uint(ct: &Content, key: &str) -> Result<u64, LmError> {
    let v = get(ct, key)?;
    let n = match v {
        Value::U8(n) => u64::from(*n),
        Value::U16(n) => u64::from(*n),
        Value::U32(n) => u64::from(*n),
        Value::U64(n) => *n,
        Value::I8(n) => u64::try_from(*n).unwrap_or(0),
        Value::I16(n) => u64::try_from(*n).unwrap_or(0),
        Value::I32(n) => u64::try_from(*n).unwrap_or(0),
        Value::I64(n) => u64::try_from(*n).unwrap_or(0),
        other => {
            return Err(LmError::Metadata {
                key: key.into(),
                problem: format!("is not an integer ({:?})", other.value_type()),
            });
        }
    };
    Ok(n)
}

pub(crate) fn float(ct: &Content, key: &str) -> Result<f64, LmError> {
    match get(ct, key)? {
        Value::F32(x) => Ok(f64::from(*x)),
        Value::F64(x) => Ok(*x),
        other => Err(LmError::Metadata {
            key: key.into(),
            problem: format!("is not a float ({:?})", other.value_type()),
        }),
    }
}

fn flag(ct: &Content, key: &str, default: bool) -> bool {
    get(ct, key)
        .and_then(|v| v.to_bool().map_err(|e| bad(key, e)))
        .unwrap_or(default)
}

fn array<'a>(ct: &'a Content, key: &str) -> Result<&'a Vec<Value>, LmError> {
    get(ct, key)?.to_vec().map_err(|e| bad(key, e))
}

impl Metadata {
    pub fn read(ct: &Content) -> Result<Self, LmError> {
        let architecture = string(ct, "general.architecture")?;
        let context_length = uint(ct, &format!("{architecture}.context_length"))? as usize;
        let key = "tokenizer.ggml.tokens";
        let tokens = array(ct, key)?
            .iter()
            .map(|v| v.to_string().cloned().map_err(|e| bad(key, e)))
            .collect::<Result<Vec<_>, _>>()?;
        let scores = match ct.metadata.get("tokenizer.ggml.scores") {
            Some(_) => array(ct, "tokenizer.ggml.scores")?
                .iter()
                .map(|v| v.to_f32().map_err(|e| bad("tokenizer.ggml.scores", e)))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let types = match ct.metadata.get("tokenizer.ggml.token_type") {
            Some(_) => array(ct, "tokenizer.ggml.token_type")?
                .iter()
                .map(|v| v.to_i32().map_err(|e| bad("tokenizer.ggml.token_type", e)))
                .collect::<Result<Vec<_>, _>>()?,
            None => vec![1; tokens.len()],
        };
        if types.len() != tokens.len() || !(scores.is_empty() || scores.len() == tokens.len()) {
            return Err(LmError::Metadata {
                key: "tokenizer.ggml.token_type".into(),
                problem: format!(
                    "has {} entries and tokenizer.ggml.scores {}, for {} tokens",
                    types.len(),
                    scores.len(),
                    tokens.len()
                ),
            });
        }
        let id = |key: &str| uint(ct, key).ok().map(|n| n as u32);
        let tokenizer = TokenizerMetadata {
            kind: string(ct, "tokenizer.ggml.model")?,
            bos: id("tokenizer.ggml.bos_token_id"),
            eos: id("tokenizer.ggml.eos_token_id"),
            add_bos: flag(ct, "tokenizer.ggml.add_bos_token", false),
            add_space_prefix: flag(ct, "tokenizer.ggml.add_space_prefix", false),
            tokens,
            scores,
            types,
        };
        Ok(Self {
            name: string_or_empty(ct, "general.name"),
            size_label: string_or_empty(ct, "general.size_label"),
            finetune: string_or_empty(ct, "general.finetune"),
            chat_template: string(ct, "tokenizer.chat_template").ok(),
            architecture,
            context_length,
            tokenizer,
        })
    }
}
