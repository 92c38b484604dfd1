//! Loading tensors from the file, with the one choice that matters for speed on a CPU:
//! what to do with quantized formats whose matrix product candle runs on a scalar path.

use std::io::{Read, Seek};
use std::sync::Arc;

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Tensor};

use crate::LmError;

/// What to do at load with weights in a format that has no SIMD dot product in candle
/// (Q5_0, Q5_1: about 62% of Gemma 3 270M Q4_K_M's block weights, most of Qwen2.5 Coder
/// 0.5B's). Measured per ruling in BENCHMARKS.md "Local judge".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlowFormats {
    /// Keep them as stored (least memory, slowest).
    AsFile,
    /// Re-quantize to Q8_0, which has an AVX2 path (about 1.5x the stored size).
    #[default]
    Q8,
    /// Dequantize to f32 (fastest, about 8x the stored size).
    F32,
}

fn scalar_only(d: GgmlDType) -> bool {
    matches!(d, GgmlDType::Q5_0 | GgmlDType::Q5_1)
}

pub(crate) struct Loader<'a, R> {
    pub ct: &'a Content,
    pub reader: &'a mut R,
    pub device: &'a Device,
    pub slow: SlowFormats,
}

impl<R: Read + Seek> Loader<'_, R> {
    fn raw(&mut self, name: &str) -> Result<QTensor, LmError> {
        self.ct
            .tensor(self.reader, name, self.device)
            .map_err(|e| LmError::Tensor {
                name: name.into(),
                problem: e.to_string(),
            })
    }

    pub fn has(&self, name: &str) -> bool {
        self.ct.tensor_infos.contains_key(name)
    }

    /// A tensor as f32 (norms, biases, the embedding table).
    pub fn dense(&mut self, name: &str) -> Result<Tensor, LmError> {
        let q = self.raw(name)?;
        Ok(q.dequantize(self.device)?)
    }

    /// A weight matrix for `x · Wᵀ`.
    pub fn matmul(&mut self, name: &str) -> Result<QMatMul, LmError> {
        let q = self.raw(name)?;
        let m = match q.dtype() {
            GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16 => {
                QMatMul::Tensor(q.dequantize(self.device)?)
            }
            d if scalar_only(d) => match self.slow {
                SlowFormats::AsFile => QMatMul::QTensor(Arc::new(q)),
                SlowFormats::Q8 => {
                    let f = q.dequantize(self.device)?;
                    QMatMul::QTensor(Arc::new(QTensor::quantize(&f, GgmlDType::Q8_0)?))
                }
                SlowFormats::F32 => QMatMul::Tensor(q.dequantize(self.device)?),
            },
            _ => QMatMul::QTensor(Arc::new(q)),
        };
        Ok(m)
    }
}
