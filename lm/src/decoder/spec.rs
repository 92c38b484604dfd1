//! The shape of a decoder, read from a file's metadata: what differs between Gemma 3 and
//! Qwen 2 is data here, not a second forward pass.

use candle_core::quantized::gguf_file::Content;

use crate::LmError;
use crate::gguf::{float, uint};

/// The feed-forward gate's activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// SwiGLU (Qwen 2).
    Silu,
    /// GeGLU with the tanh approximation of GELU (Gemma 3's `gelu_pytorch_tanh`).
    GeluTanh,
}

/// One block's attention geometry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockShape {
    pub rope_base: f32,
    /// Keys further back than this many positions are masked (Gemma 3's local layers).
    pub window: Option<usize>,
}

/// Everything the forward pass needs to know besides the weights.
#[derive(Debug, Clone)]
pub struct Spec {
    pub architecture: String,
    pub hidden: usize,
    pub n_head: usize,
    pub n_kv_head: usize,
    pub head_dim: usize,
    pub eps: f64,
    /// Gemma multiplies the token embedding by sqrt(hidden).
    pub embed_scale: Option<f64>,
    pub activation: Activation,
    /// Gemma 3: RMSNorm of each query and key head, and norms after attention and MLP.
    pub qk_norm: bool,
    pub post_norms: bool,
    /// Qwen 2: biases on the q, k, v projections.
    pub qkv_bias: bool,
    pub blocks: Vec<BlockShape>,
}

/// Gemma 3's pattern when the file does not state it: every sixth block is global.
const GEMMA3_SLIDING_PATTERN: usize = 6;
const GEMMA3_LOCAL_ROPE_BASE: f64 = 10_000.0;

impl Spec {
    pub fn read(ct: &Content, architecture: &str) -> Result<Self, LmError> {
        let a = architecture;
        let n = |k: &str| uint(ct, &format!("{a}.{k}")).map(|v| v as usize);
        let hidden = n("embedding_length")?;
        let n_head = n("attention.head_count")?;
        let n_kv_head = n("attention.head_count_kv").unwrap_or(n_head);
        let block_count = n("block_count")?;
        let head_dim = n("attention.key_length").unwrap_or(hidden / n_head.max(1));
        let eps = float(ct, &format!("{a}.attention.layer_norm_rms_epsilon"))?;
        let rope_base = float(ct, &format!("{a}.rope.freq_base")).unwrap_or(10_000.0) as f32;
        if n_head == 0 || n_kv_head == 0 || n_head % n_kv_head != 0 {
            return Err(LmError::Metadata {
                key: format!("{a}.attention.head_count_kv"),
                problem: format!("{n_kv_head} does not divide head_count {n_head}"),
            });
        }
        let spec = match a {
            "gemma3" => {
                let window = n("attention.sliding_window")?;
                let pattern = n("attention.sliding_window_type").unwrap_or(GEMMA3_SLIDING_PATTERN);
                let local = float(ct, &format!("{a}.rope.local_freq_base"))
                    .unwrap_or(GEMMA3_LOCAL_ROPE_BASE) as f32;
                let blocks = (0..block_count)
                    .map(|i| {
                        if (i + 1) % pattern.max(1) == 0 {
                            BlockShape {
                                rope_base,
                                window: None,
                            }
                        } else {
                            BlockShape {
                                rope_base: local,
                                window: Some(window),
                            }
                        }
                    })
                    .collect();
                Spec {
                    architecture: a.into(),
                    hidden,
                    n_head,
                    n_kv_head,
                    head_dim,
                    eps,
                    embed_scale: Some((hidden as f64).sqrt()),
                    activation: Activation::GeluTanh,
                    qk_norm: true,
                    post_norms: true,
                    qkv_bias: false,
                    blocks,
                }
            }
            "qwen2" => Spec {
                architecture: a.into(),
                hidden,
                n_head,
                n_kv_head,
                head_dim,
                eps,
                embed_scale: None,
                activation: Activation::Silu,
                qk_norm: false,
                post_norms: false,
                qkv_bias: true,
                blocks: vec![
                    BlockShape {
                        rope_base,
                        window: None
                    };
                    block_count
                ],
            },
            other => return Err(LmError::Architecture(other.into())),
        };
        Ok(spec)
    }
}
