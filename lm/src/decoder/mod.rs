//! One decoder-only transformer for the two architectures the shipped models use, on
//! candle's tensors and quantized matrix kernels.
//!
//! Why not candle-transformers' `quantized_gemma3` and `quantized_qwen2`: the first uses
//! SiLU where Gemma 3 uses tanh-approximated GELU (perplexity on plain English 18.5 with
//! SiLU against 8.8 with GELU, measured), sizes its rotary tables for 131,072 positions
//! (2.3 GB), and masks cached positions wrongly when a prompt is fed after a cached prefix;
//! both keep their KV cache inside the weights, so a shared prompt prefix cannot be reused
//! for two continuations. Here the weights are immutable and the [`Cache`] is a value:
//! clone it after the shared prefix, extend each clone (two presentation orders, one
//! ruling). The differences between the architectures are data ([`spec::Spec`]).

pub mod spec;
mod weights;

use std::io::{Read, Seek};

use candle_core::quantized::QMatMul;
use candle_core::quantized::gguf_file::Content;
use candle_core::{DType, Device, IndexOp, Module, Tensor};

pub use spec::{Activation, BlockShape, Spec};
use weights::Loader;
pub use weights::SlowFormats;

use crate::LmError;

struct Linear {
    w: QMatMul,
    b: Option<Tensor>,
}

impl Linear {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = self.w.forward(x)?;
        match &self.b {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}

struct Block {
    shape: BlockShape,
    attn_norm: Tensor,
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    q_norm: Option<Tensor>,
    k_norm: Option<Tensor>,
    post_attn_norm: Option<Tensor>,
    ffn_norm: Tensor,
    gate: QMatMul,
    up: QMatMul,
    down: QMatMul,
    post_ffn_norm: Option<Tensor>,
}

/// The keys and values of the positions fed so far, per block. Cloning is cheap (the
/// tensors are shared), which is how a prompt prefix is reused.
#[derive(Clone, Debug, Default)]
pub struct Cache {
    kv: Vec<Option<(Tensor, Tensor)>>,
    len: usize,
}

impl Cache {
    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every position from `len` on (a prompt that shares only a prefix with the
    /// one this cache was built for).
    pub fn truncate(&mut self, len: usize) -> Result<(), LmError> {
        if len >= self.len {
            return Ok(());
        }
        for (k, v) in self.kv.iter_mut().flatten() {
            *k = k.narrow(2, 0, len)?;
            *v = v.narrow(2, 0, len)?;
        }
        self.len = len;
        Ok(())
    }
}

/// A loaded decoder.
pub struct Decoder {
    spec: Spec,
    /// The token embedding table, f16 to halve its memory (262,144 x 640 for Gemma 3).
    embed: Tensor,
    blocks: Vec<Block>,
    norm: Tensor,
    output: QMatMul,
    device: Device,
    /// Longest sequence a cache may hold.
    context: usize,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder").field("spec", &self.spec).finish()
    }
}

fn rms(x: &Tensor, w: &Tensor, eps: f64) -> candle_core::Result<Tensor> {
    candle_nn::ops::rms_norm(&x.contiguous()?, w, eps as f32)
}

impl Decoder {
    pub fn load<R: Read + Seek>(
        ct: &Content,
        reader: &mut R,
        architecture: &str,
        slow: SlowFormats,
        context: usize,
    ) -> Result<Self, LmError> {
        let spec = Spec::read(ct, architecture)?;
        let device = Device::Cpu;
        let mut l = Loader {
            ct,
            reader,
            device: &device,
            slow,
        };
        let embed = l.dense("token_embd.weight")?.to_dtype(DType::F16)?;
        let output = if l.has("output.weight") {
            l.matmul("output.weight")?
        } else {
            l.matmul("token_embd.weight")?
        };
        let norm = l.dense("output_norm.weight")?;
        let mut blocks = Vec::with_capacity(spec.blocks.len());
        for (i, shape) in spec.blocks.iter().enumerate() {
            blocks.push(Self::load_block(&mut l, &spec, i, *shape)?);
        }
        Ok(Self {
            spec,
            embed,
            blocks,
            norm,
            output,
            device,
            context,
        })
    }

    fn load_block<R: Read + Seek>(
        l: &mut Loader<'_, R>,
        spec: &Spec,
        i: usize,
        shape: BlockShape,
    ) -> Result<Block, LmError> {
        let name = |s: &str| format!("blk.{i}.{s}");
        let linear = |l: &mut Loader<'_, R>, s: &str, bias: bool| -> Result<Linear, LmError> {
            Ok(Linear {
                w: l.matmul(&name(&format!("{s}.weight")))?,
                b: if bias {
                    Some(l.dense(&name(&format!("{s}.bias")))?)
                } else {
                    None
                },
            })
        };
        let q = linear(l, "attn_q", spec.qkv_bias)?;
        let k = linear(l, "attn_k", spec.qkv_bias)?;
        let v = linear(l, "attn_v", spec.qkv_bias)?;
        let o = linear(l, "attn_output", false)?;
        let opt = |l: &mut Loader<'_, R>, s: &str, on: bool| -> Result<Option<Tensor>, LmError> {
            if on {
                Ok(Some(l.dense(&name(s))?))
            } else {
                Ok(None)
            }
        };
        Ok(Block {
            shape,
            attn_norm: l.dense(&name("attn_norm.weight"))?,
            q,
            k,
            v,
            o,
            q_norm: opt(l, "attn_q_norm.weight", spec.qk_norm)?,
            k_norm: opt(l, "attn_k_norm.weight", spec.qk_norm)?,
            post_attn_norm: opt(l, "post_attention_norm.weight", spec.post_norms)?,
            ffn_norm: l.dense(&name("ffn_norm.weight"))?,
            gate: l.matmul(&name("ffn_gate.weight"))?,
            up: l.matmul(&name("ffn_up.weight"))?,
            down: l.matmul(&name("ffn_down.weight"))?,
            post_ffn_norm: opt(l, "post_ffw_norm.weight", spec.post_norms)?,
        })
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The longest sequence (prompt and generated tokens) a cache may hold.
    pub fn context(&self) -> usize {
        self.context
    }

    /// Feeds `tokens` after what `cache` holds and returns the logits of the next token.
    pub fn forward(&self, tokens: &[u32], cache: &mut Cache) -> Result<Vec<f32>, LmError> {
        if tokens.is_empty() {
            return Err(LmError::EmptyPrompt);
        }
        let total = cache.len + tokens.len();
        if total > self.context {
            return Err(LmError::PromptTooLong {
                tokens: total,
                context: self.context,
            });
        }
        cache.kv.resize(self.blocks.len(), None);
        let ids = Tensor::new(tokens, &self.device)?;
        let mut x = self
            .embed
            .index_select(&ids, 0)?
            .to_dtype(DType::F32)?
            .unsqueeze(0)?;
        if let Some(s) = self.spec.embed_scale {
            x = (x * s)?;
        }
        for (block, kv) in self.blocks.iter().zip(cache.kv.iter_mut()) {
            x = self.block(block, &x, cache.len, kv)?;
        }
        cache.len = total;
        let last = x.i((.., tokens.len() - 1, ..))?;
        let last = rms(&last, &self.norm, self.spec.eps)?;
        let logits = self.output.forward(&last)?.squeeze(0)?;
        Ok(logits.to_dtype(DType::F32)?.to_vec1()?)
    }

    fn block(
        &self,
        b: &Block,
        x: &Tensor,
        pos: usize,
        kv: &mut Option<(Tensor, Tensor)>,
    ) -> candle_core::Result<Tensor> {
        let eps = self.spec.eps;
        let h = rms(x, &b.attn_norm, eps)?;
        let mut a = self.attention(b, &h, pos, kv)?;
        if let Some(w) = &b.post_attn_norm {
            a = rms(&a, w, eps)?;
        }
        let x = (x + a)?;
        let h = rms(&x, &b.ffn_norm, eps)?;
        let gate = b.gate.forward(&h)?;
        let gate = match self.spec.activation {
            Activation::Silu => candle_nn::ops::silu(&gate)?,
            Activation::GeluTanh => gate.gelu()?,
        };
        let mut m = b.down.forward(&(gate * b.up.forward(&h)?)?)?;
        if let Some(w) = &b.post_ffn_norm {
            m = rms(&m, w, eps)?;
        }
        x + m
    }

    /// Rotary tables for positions `pos..pos + n`.
    fn rope(&self, base: f32, pos: usize, n: usize) -> candle_core::Result<(Tensor, Tensor)> {
        let d = self.spec.head_dim;
        let inv: Vec<f32> = (0..d / 2)
            .map(|i| 1.0 / base.powf((2 * i) as f32 / d as f32))
            .collect();
        let inv = Tensor::new(inv.as_slice(), &self.device)?.reshape((1, d / 2))?;
        let t = Tensor::arange(pos as u32, (pos + n) as u32, &self.device)?
            .to_dtype(DType::F32)?
            .reshape((n, 1))?;
        let f = t.matmul(&inv)?;
        Ok((f.cos()?, f.sin()?))
    }

    /// Additive mask for `n` new queries at `pos..` over `pos + n` keys: causal, and for a
    /// local block nothing older than its window.
    fn mask(&self, window: Option<usize>, pos: usize, n: usize) -> candle_core::Result<Tensor> {
        let t = pos + n;
        let v: Vec<f32> = (0..n)
            .flat_map(|i| {
                let q = pos + i;
                (0..t).map(move |j| {
                    let visible = j <= q && window.is_none_or(|w| q - j < w);
                    if visible { 0.0 } else { f32::NEG_INFINITY }
                })
            })
            .collect();
        Tensor::from_vec(v, (n, t), &self.device)
    }

    fn attention(
        &self,
        b: &Block,
        x: &Tensor,
        pos: usize,
        kv: &mut Option<(Tensor, Tensor)>,
    ) -> candle_core::Result<Tensor> {
        let s = &self.spec;
        let (_, n, _) = x.dims3()?;
        let heads = |t: Tensor, h: usize| -> candle_core::Result<Tensor> {
            t.reshape((1, n, h, s.head_dim))?
                .transpose(1, 2)?
                .contiguous()
        };
        let mut q = heads(b.q.forward(x)?, s.n_head)?;
        let mut k = heads(b.k.forward(x)?, s.n_kv_head)?;
        let v = heads(b.v.forward(x)?, s.n_kv_head)?;
        if let (Some(qn), Some(kn)) = (&b.q_norm, &b.k_norm) {
            q = rms(&q, qn, s.eps)?;
            k = rms(&k, kn, s.eps)?;
        }
        let (cos, sin) = self.rope(b.shape.rope_base, pos, n)?;
        let q = candle_nn::rotary_emb::rope(&q, &cos, &sin)?;
        let k = candle_nn::rotary_emb::rope(&k, &cos, &sin)?;
        let (k, v) = match kv.take() {
            Some((pk, pv)) => (Tensor::cat(&[&pk, &k], 2)?, Tensor::cat(&[&pv, &v], 2)?),
            None => (k, v),
        };
        *kv = Some((k.clone(), v.clone()));
        let rep = s.n_head / s.n_kv_head;
        let repeat = |t: Tensor| -> candle_core::Result<Tensor> {
            if rep == 1 {
                return Ok(t);
            }
            let (bs, h, len, d) = t.dims4()?;
            t.unsqueeze(2)?
                .expand((bs, h, rep, len, d))?
                .contiguous()?
                .reshape((bs, h * rep, len, d))
        };
        let (k, v) = (repeat(k)?, repeat(v)?);
        let scale = 1.0 / (s.head_dim as f64).sqrt();
        let scores = (q.matmul(&k.t()?)? * scale)?;
        let scores = scores.broadcast_add(&self.mask(b.shape.window, pos, n)?)?;
        let p = candle_nn::ops::softmax_last_dim(&scores)?;
        let out = p.matmul(&v.contiguous()?)?;
        let out = out
            .transpose(1, 2)?
            .reshape((1, n, s.n_head * s.head_dim))?;
        b.o.forward(&out)
    }
}

/// Log-probabilities of the next token, from logits.
pub fn log_softmax(logits: &[f32]) -> Vec<f64> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    let ln = sum.ln() + max;
    logits.iter().map(|&l| l as f64 - ln).collect()
}
