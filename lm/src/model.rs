//! A model: the decoder, its tokenizer and its chat template, loaded once from one file.

use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::Content;

use crate::LmError;
use crate::chat::{ChatTemplate, Message};
use crate::decoder::{Cache, Decoder, SlowFormats, log_softmax};
use crate::gguf::Metadata;
use crate::tokenizer::Tokenizer;

/// How to load a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    pub slow_formats: SlowFormats,
    /// The longest sequence (prompt and generated tokens) one ruling may use; bounds the
    /// memory of a cache.
    pub context: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            slow_formats: SlowFormats::default(),
            context: 4096,
        }
    }
}

/// A loaded model.
#[derive(Debug)]
pub struct Model {
    path: PathBuf,
    metadata: Metadata,
    tokenizer: Tokenizer,
    decoder: Decoder,
    template: Option<ChatTemplate>,
    /// Tokens that end a generated answer (EOS, end-of-turn markers).
    stop: Vec<u32>,
}

/// The next-token distribution after a prompt.
#[derive(Debug, Clone)]
pub struct NextToken {
    /// Natural-log probabilities, one per vocabulary entry.
    pub logprobs: Vec<f64>,
}

impl NextToken {
    pub fn from_logits(logits: &[f32]) -> Self {
        Self {
            logprobs: log_softmax(logits),
        }
    }

    /// Total probability of `ids`.
    pub fn mass(&self, ids: &[u32]) -> f64 {
        ids.iter()
            .filter_map(|&i| self.logprobs.get(i as usize))
            .map(|lp| lp.exp())
            .sum()
    }

    /// The `k` most likely tokens, most likely first.
    pub fn top(&self, k: usize) -> Vec<(u32, f64)> {
        let mut v: Vec<(u32, f64)> = self
            .logprobs
            .iter()
            .enumerate()
            .map(|(i, &lp)| (i as u32, lp))
            .collect();
        let k = k.min(v.len());
        if k == 0 {
            return Vec::new();
        }
        v.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
        v.truncate(k);
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    }
}

/// Stop markers looked up by text, for files that name only their EOS.
const END_OF_TURN: [&str; 3] = ["<end_of_turn>", "<|im_end|>", "<|endoftext|>"];

impl Model {
    pub fn load(path: &Path, opts: LoadOptions) -> Result<Self, LmError> {
        let mut file = std::fs::File::open(path).map_err(|source| LmError::Open {
            path: path.to_owned(),
            source,
        })?;
        let ct = Content::read(&mut file).map_err(|e| LmError::NotGguf {
            path: path.to_owned(),
            problem: e.to_string(),
        })?;
        let metadata = Metadata::read(&ct)?;
        let tokenizer = Tokenizer::from_gguf(&metadata, &ct)?;
        let piece = |id: Option<u32>| {
            id.and_then(|i| metadata.tokenizer.tokens.get(i as usize).cloned())
                .unwrap_or_default()
        };
        let template = metadata
            .chat_template
            .as_deref()
            .map(|src| {
                ChatTemplate::new(
                    src,
                    &piece(metadata.tokenizer.bos),
                    &piece(metadata.tokenizer.eos),
                )
            })
            .transpose()?;
        let decoder = Decoder::load(
            &ct,
            &mut file,
            &metadata.architecture,
            opts.slow_formats,
            opts.context.min(metadata.context_length.max(1)),
        )?;
        let mut stop: Vec<u32> = metadata.tokenizer.eos.into_iter().collect();
        for marker in END_OF_TURN {
            if let Some(i) = metadata.tokenizer.tokens.iter().position(|t| t == marker) {
                stop.push(i as u32);
            }
        }
        stop.sort_unstable();
        stop.dedup();
        Ok(Self {
            path: path.to_owned(),
            metadata,
            tokenizer,
            decoder,
            template,
            stop,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Whether the file carries a chat template (an instruction-tuned model).
    pub fn has_chat_template(&self) -> bool {
        self.template.is_some()
    }

    /// A human-readable name: "Gemma 3 270m", "Qwen2.5 Coder 0.5B Instruct AWQ".
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The prompt for a system and a user message: the file's chat template ending at the
    /// assistant's turn, or for a base model the two texts one after the other.
    pub fn chat_prompt(&self, system: &str, user: &str) -> Result<String, LmError> {
        match &self.template {
            Some(t) => t.render(&[
                Message {
                    role: "system",
                    content: system,
                },
                Message {
                    role: "user",
                    content: user,
                },
            ]),
            None => Ok(format!("{system}\n\n{user}")),
        }
    }

    /// Tokens of a rendered prompt, with BOS where the file asks for it. Chat markers in
    /// the rendered text are recognised; callers keep them out of content (see
    /// [`Model::scrub`]).
    pub fn prompt_tokens(&self, prompt: &str) -> Result<Vec<u32>, LmError> {
        let mut ids = Vec::new();
        if self.metadata.tokenizer.add_bos
            && let Some(b) = self.metadata.tokenizer.bos
        {
            ids.push(b);
        }
        ids.extend(self.tokenizer.encode(prompt, true)?);
        Ok(ids)
    }

    /// Continuation tokens (no BOS, no markers recognised).
    pub fn text_tokens(&self, text: &str) -> Result<Vec<u32>, LmError> {
        self.tokenizer.encode(text, false)
    }

    /// `text` with every control marker of this model's vocabulary broken up, so content
    /// placed in a prompt cannot open or close a turn.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (piece, ty) in self
            .metadata
            .tokenizer
            .tokens
            .iter()
            .zip(&self.metadata.tokenizer.types)
        {
            if *ty == 3 && piece.len() > 1 && out.contains(piece.as_str()) {
                let cut = piece.chars().next().map_or(1, char::len_utf8);
                let broken = format!("{} {}", &piece[..cut], &piece[cut..]);
                out = out.replace(piece.as_str(), &broken);
            }
        }
        out
    }

    /// Feeds `tokens` after `cache` and returns the next-token distribution.
    pub fn feed(&self, cache: &mut Cache, tokens: &[u32]) -> Result<NextToken, LmError> {
        let logits = self.decoder.forward(tokens, cache)?;
        Ok(NextToken::from_logits(&logits))
    }

    /// The next-token distribution after `tokens`, from an empty cache.
    pub fn next_token(&self, tokens: &[u32]) -> Result<(Cache, NextToken), LmError> {
        let mut cache = Cache::default();
        let next = self.feed(&mut cache, tokens)?;
        Ok((cache, next))
    }

    /// Up to `max_tokens` tokens after `cache` (whose last distribution is `next`), greedy
    /// at `temperature` 0, else sampled with the caller's `seed`; stops at an end marker or
    /// the context. Returns the text and the number of tokens generated.
    pub fn generate(
        &self,
        mut cache: Cache,
        mut next: NextToken,
        max_tokens: usize,
        temperature: f64,
        seed: u64,
    ) -> Result<(String, usize), LmError> {
        let mut sampler = crate::sampling::Sampler::new(temperature, seed);
        let mut out = Vec::new();
        while out.len() < max_tokens && cache.len() < self.decoder.context() {
            let id = sampler.pick(&next);
            if self.stop.contains(&id) {
                break;
            }
            out.push(id);
            if out.len() == max_tokens {
                break;
            }
            next = self.feed(&mut cache, &[id])?;
        }
        Ok((self.tokenizer.decode(&out), out.len()))
    }
}
