//! Byte-level BPE from GGUF metadata (`tokenizer.ggml.model = gpt2`, Qwen 2): candle's
//! builder of a `tokenizers` pipeline from the file (vocabulary, merges, the split pattern
//! named by `tokenizer.ggml.pre`), which matches an independent `tiktoken` build from the
//! same ranks (testvectors/lm/qwen2-tokens.json).

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::tokenizer::TokenizerFromGguf;

use crate::LmError;

pub struct ByteLevel {
    inner: tokenizers::Tokenizer,
}

impl std::fmt::Debug for ByteLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteLevel")
            .field("vocab", &self.inner.get_vocab_size(true))
            .finish()
    }
}

impl ByteLevel {
    pub fn from_gguf(ct: &Content) -> Result<Self, LmError> {
        let inner = tokenizers::Tokenizer::from_gguf(ct)
            .map_err(|e| LmError::Tokenizer(format!("building the gpt2 tokenizer: {e}")))?;
        Ok(Self { inner })
    }

    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    pub fn token_id(&self, piece: &str) -> Option<u32> {
        self.inner.token_to_id(piece).or_else(|| {
            // A piece written as text: " Yes" is stored as "ĠYes".
            let ids = self.encode(piece, false).ok()?;
            (ids.len() == 1).then(|| ids[0])
        })
    }

    /// Token ids of `text`, no BOS. Special tokens written in the text (`<|im_start|>`) are
    /// recognised only with `special`; otherwise they are spelled out as plain text, so a
    /// debate's content cannot smuggle a chat marker into the prompt.
    pub fn encode(&self, text: &str, special: bool) -> Result<Vec<u32>, LmError> {
        if !special {
            return self.encode_plain(text);
        }
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| LmError::Tokenizer(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    fn encode_plain(&self, text: &str) -> Result<Vec<u32>, LmError> {
        // `tokenizers` always matches added tokens; break each special marker so that it
        // is tokenized as ordinary text.
        let specials: Vec<String> = self
            .inner
            .get_added_tokens_decoder()
            .values()
            .filter(|t| t.special && !t.content.is_empty())
            .map(|t| t.content.clone())
            .collect();
        let mut pieces: Vec<&str> = vec![text];
        for s in &specials {
            pieces = pieces.into_iter().flat_map(|p| split_keep(p, s)).collect();
        }
        let mut out = Vec::new();
        for p in pieces {
            if specials.iter().any(|s| s == p) {
                // Spell the marker as text: its first character alone, then the rest.
                let cut = p.chars().next().map_or(0, char::len_utf8);
                for part in [&p[..cut], &p[cut..]] {
                    out.extend(self.encode_segment(part)?);
                }
            } else {
                out.extend(self.encode_segment(p)?);
            }
        }
        Ok(out)
    }

    fn encode_segment(&self, text: &str) -> Result<Vec<u32>, LmError> {
        if text.is_empty() {
            return Ok(Vec::new());
        }
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| LmError::Tokenizer(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    pub fn decode(&self, ids: &[u32]) -> String {
        self.inner.decode(ids, true).unwrap_or_default()
    }
}

/// `text` split around every occurrence of `sep`, the separators kept as their own parts.
fn split_keep<'a>(text: &'a str, sep: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(sep) {
        if i > 0 {
            out.push(&rest[..i]);
        }
        out.push(&rest[i..i + sep.len()]);
        rest = &rest[i + sep.len()..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}
