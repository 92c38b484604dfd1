//! Tokenizers built from a GGUF file's metadata, for the two kinds the shipped models use.

mod byte_level;
mod sentencepiece;

use candle_core::quantized::gguf_file::Content;

pub use byte_level::ByteLevel;
pub use sentencepiece::SentencePiece;

use crate::LmError;
use crate::gguf::Metadata;

/// A model's tokenizer.
#[derive(Debug)]
pub enum Tokenizer {
    /// `llama`: SentencePiece BPE (Gemma 3).
    SentencePiece(Box<SentencePiece>),
    /// `gpt2`: byte-level BPE (Qwen 2).
    ByteLevel(Box<ByteLevel>),
}

impl Tokenizer {
    pub fn from_gguf(md: &Metadata, ct: &Content) -> Result<Self, LmError> {
        match md.tokenizer.kind.as_str() {
            "llama" => Ok(Self::SentencePiece(Box::new(SentencePiece::new(
                &md.tokenizer,
            )?))),
            "gpt2" => Ok(Self::ByteLevel(Box::new(ByteLevel::from_gguf(ct)?))),
            other => Err(LmError::TokenizerKind(other.into())),
        }
    }

    /// Token ids of `text` (no BOS). `special`: recognise control markers written in the
    /// text (a rendered chat template); never for content a debate supplied.
    pub fn encode(&self, text: &str, special: bool) -> Result<Vec<u32>, LmError> {
        match self {
            Self::SentencePiece(t) => Ok(t.encode(text, special)),
            Self::ByteLevel(t) => t.encode(text, special),
        }
    }

    pub fn decode(&self, ids: &[u32]) -> String {
        match self {
            Self::SentencePiece(t) => t.decode(ids),
            Self::ByteLevel(t) => t.decode(ids),
        }
    }

    /// The single token that spells `text`, if there is one (`" Yes"`, `"No"`).
    pub fn token_id(&self, text: &str) -> Option<u32> {
        match self {
            Self::SentencePiece(t) => t.token_id(text),
            Self::ByteLevel(t) => t.token_id(text),
        }
    }

    pub fn vocab_size(&self) -> usize {
        match self {
            Self::SentencePiece(t) => t.vocab_size(),
            Self::ByteLevel(t) => t.vocab_size(),
        }
    }
}
