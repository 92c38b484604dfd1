//! An independent reader of the canonical layouts, written from docs/WIRE.md rather than
//! from the encoder, so a disagreement between the document and the code shows up as a
//! fuzz failure.

use panel_proto::pb::{
    Citation, ContentProjection, ExamItem, ExpectedAnswer, Motion, PanelSeat, ProcedureQuestion,
    ProjectionItem,
};

/// A cursor over canonical bytes; every read fails (`None`) past the end.
pub struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Self { b }
    }
    pub fn tag(&mut self, tag: &[u8]) -> Option<()> {
        (self.fixed(tag.len())? == tag).then_some(())
    }
    pub fn fixed(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.b.len() < n {
            return None;
        }
        let (head, tail) = self.b.split_at(n);
        self.b = tail;
        Some(head)
    }
    pub fn array32(&mut self) -> Option<[u8; 32]> {
        self.fixed(32)?.try_into().ok()
    }
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.fixed(1)?[0])
    }
    pub fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.fixed(2)?.try_into().ok()?))
    }
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.fixed(4)?.try_into().ok()?))
    }
    pub fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.fixed(4)?.try_into().ok()?))
    }
    pub fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.fixed(8)?.try_into().ok()?))
    }
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.fixed(8)?.try_into().ok()?))
    }
    pub fn f64(&mut self) -> Option<f64> {
        Some(f64::from_bits(self.u64()?))
    }
    /// `text` of the signed layouts: u16 length, UTF-8 bytes.
    pub fn text16(&mut self) -> Option<String> {
        let n = usize::from(self.u16()?);
        String::from_utf8(self.fixed(n)?.to_vec()).ok()
    }
    /// `bytes` of the motion layout: u32 length, bytes.
    pub fn bytes32(&mut self) -> Option<Vec<u8>> {
        let n = usize::try_from(self.u32()?).ok()?;
        Some(self.fixed(n)?.to_vec())
    }
    pub fn text32(&mut self) -> Option<String> {
        String::from_utf8(self.bytes32()?).ok()
    }
    pub fn present(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.b.is_empty()
    }
    pub fn peek_u8(&self) -> Option<u8> {
        self.b.first().copied()
    }
}

/// The fields a ruling layout carries (the rationale only by digest).
#[derive(Debug, Clone, PartialEq)]
pub struct RulingFields {
    pub motion_id: String,
    pub debate_id: String,
    pub kind: u8,
    pub state_hash: [u8; 32],
    pub motion_digest: Option<[u8; 32]>,
    pub decision: u8,
    /// Bits, so that equality is exact (the layout writes -0.0 as +0.0).
    pub probability: u64,
    pub relevance: u8,
    pub tier: u8,
    pub quantiles: Vec<(u64, u64)>,
    pub receipt: Option<([u8; 32], i64, String)>,
    pub rationale_digest: [u8; 32],
    pub arbiter_key: [u8; 32],
    pub issued_at: i64,
}

/// Reads a ruling layout of envelope version `version` (1 or 2). `None` if the bytes are
/// not exactly one such layout.
pub fn read_ruling(bytes: &[u8], version: u32) -> Option<RulingFields> {
    let mut r = Reader::new(bytes);
    let tag: &[u8] = match version {
        1 => panel_proto::signing::RULING_TAG_V1,
        2 => panel_proto::signing::RULING_TAG_V2,
        _ => return None,
    };
    r.tag(tag)?;
    let motion_id = r.text16()?;
    let debate_id = r.text16()?;
    let kind = r.u8()?;
    let state_hash = r.array32()?;
    let motion_digest = if version == 2 {
        Some(r.array32()?)
    } else {
        None
    };
    let decision = r.u8()?;
    let probability = r.u64()?;
    let relevance = r.u8()?;
    let tier = r.u8()?;
    let n = r.u8()?;
    let mut quantiles = Vec::with_capacity(usize::from(n));
    for _ in 0..n {
        quantiles.push((r.u64()?, r.u64()?));
    }
    let receipt = if r.present()? {
        Some((r.array32()?, r.i64()?, r.text16()?))
    } else {
        None
    };
    let fields = RulingFields {
        motion_id,
        debate_id,
        kind,
        state_hash,
        motion_digest,
        decision,
        probability,
        relevance,
        tier,
        quantiles,
        receipt,
        rationale_digest: r.array32()?,
        arbiter_key: r.array32()?,
        issued_at: r.i64()?,
    };
    r.is_empty().then_some(fields)
}

/// `f64` as the layouts write it: `-0.0` as `+0.0`.
pub fn canonical_bits(v: f64) -> u64 {
    if v == 0.0 { 0 } else { v.to_bits() }
}

/// What the layout should hold for `r` (the expectation the fuzz target compares with).
pub fn expected_ruling(r: &panel_proto::pb::Ruling, version: u32) -> Option<RulingFields> {
    Some(RulingFields {
        motion_id: r.motion_id.clone(),
        debate_id: r.debate_id.clone(),
        kind: u8::try_from(r.kind).ok()?,
        state_hash: r.state_hash.as_slice().try_into().ok()?,
        motion_digest: if version == 2 {
            Some(r.motion_digest.as_slice().try_into().ok()?)
        } else {
            None
        },
        decision: u8::try_from(r.decision).ok()?,
        probability: canonical_bits(r.probability),
        relevance: r.relevance.map_or(Some(0), |v| u8::try_from(v).ok())?,
        tier: r.tier.map_or(Some(0), |v| u8::try_from(v).ok())?,
        quantiles: r
            .quantiles
            .iter()
            .map(|q| (canonical_bits(q.level), canonical_bits(q.value)))
            .collect(),
        receipt: match &r.receipt {
            None => None,
            Some(rc) => Some((
                rc.sha256.as_slice().try_into().ok()?,
                rc.fetched_at_unix_ms,
                rc.url.clone(),
            )),
        },
        rationale_digest: panel_proto::signing::rationale_digest(&r.rationale),
        arbiter_key: r.arbiter_key.as_slice().try_into().ok()?,
        issued_at: r.issued_at_unix_ms,
    })
}

/// The fields a commitment layout carries.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitmentFields {
    pub motion_id: String,
    pub debate_id: String,
    pub arbiter_key: [u8; 32],
    pub digest: [u8; 32],
    pub committed_at: i64,
}

/// Reads a commitment layout. `None` if the bytes are not exactly one.
pub fn read_commitment(bytes: &[u8]) -> Option<CommitmentFields> {
    let mut r = Reader::new(bytes);
    r.tag(panel_proto::signing::COMMITMENT_TAG_V1)?;
    let out = CommitmentFields {
        motion_id: r.text16()?,
        debate_id: r.text16()?,
        arbiter_key: r.array32()?,
        digest: r.array32()?,
        committed_at: r.i64()?,
    };
    r.is_empty().then_some(out)
}

/// Reads a link hello layout into (nonce, arbiter id, replica id).
pub fn read_hello(bytes: &[u8]) -> Option<([u8; 32], String, u64)> {
    let mut r = Reader::new(bytes);
    r.tag(b"crucible-panel/link-hello/v1\0")?;
    let out = (r.array32()?, r.text16()?, r.u64()?);
    r.is_empty().then_some(out)
}

/// Reads a motion layout (v1) back into a motion without its signature. Floats come back
/// as written (`-0.0` as `+0.0`); the caller normalises before comparing.
pub fn read_motion(bytes: &[u8]) -> Option<Motion> {
    let mut r = Reader::new(bytes);
    r.tag(b"crucible-panel/motion/v1\0")?;
    let motion_id = r.text32()?;
    let debate_id = r.text32()?;
    let kind = r.i32()?;
    let state_hash = r.bytes32()?;
    let projection = if r.present()? {
        Some(read_projection(&mut r)?)
    } else {
        None
    };
    let commit_deadline_unix_ms = r.i64()?;
    let reveal_deadline_unix_ms = r.i64()?;
    let seats = r.u32()?;
    let mut panel = Vec::new();
    for _ in 0..seats {
        panel.push(PanelSeat {
            public_key: r.bytes32()?,
            endpoint: r.text32()?,
        });
    }
    let signer_key = r.bytes32()?;
    let m = Motion {
        motion_id,
        debate_id,
        kind,
        state_hash,
        projection,
        commit_deadline_unix_ms,
        reveal_deadline_unix_ms,
        panel,
        signer_key,
        signature: Vec::new(),
        // Seals sign the digest; they are not in the layout.
        seals: Vec::new(),
    };
    r.is_empty().then_some(m)
}

fn read_projection(r: &mut Reader<'_>) -> Option<ContentProjection> {
    let question = r.text32()?;
    let n = r.u32()?;
    let mut items = Vec::new();
    for _ in 0..n {
        let label = r.text32()?;
        let text = r.text32()?;
        let side = r.i32()?;
        let c = r.u32()?;
        let mut citations = Vec::new();
        for _ in 0..c {
            citations.push(Citation {
                source: r.text32()?,
                url: r.text32()?,
                claimed_tier: r.u32()?,
                quote: r.text32()?,
            });
        }
        items.push(ProjectionItem {
            label,
            text,
            side,
            citations,
        });
    }
    let resolution = r.text32()?;
    let affirmative_favours = r.i32()?;
    let exam_item = if r.present()? {
        let item_id = r.text32()?;
        let question = r.text32()?;
        let answer_kind = r.i32()?;
        let n = r.u32()?;
        let mut quantile_levels = Vec::new();
        for _ in 0..n {
            quantile_levels.push(r.f64()?);
        }
        Some(ExamItem {
            item_id,
            question,
            answer_kind,
            quantile_levels,
            unit: r.text32()?,
            seed: r.present()?,
        })
    } else {
        None
    };
    let expected = if r.present()? {
        let decision = r.i32()?;
        let value = if r.present()? { Some(r.f64()?) } else { None };
        let relevance = if r.present()? { Some(r.u32()?) } else { None };
        let tier = if r.present()? { Some(r.u32()?) } else { None };
        Some(ExpectedAnswer {
            decision,
            value,
            relevance,
            tier,
        })
    } else {
        None
    };
    // A procedure question is appended only when present, so its presence byte is the
    // only thing telling it from the commit deadline that follows otherwise.
    let procedure = if r.peek_u8() == Some(1) {
        r.u8()?;
        Some(ProcedureQuestion {
            run_id: r.text32()?,
            key: r.text32()?,
            answer_shape: r.u32()?,
            shuffle_items: r.present()?,
            presentation_seed: r.i64()? as u64,
            expected_rationale: r.text32()?,
        })
    } else {
        None
    };
    Some(ContentProjection {
        question,
        items,
        resolution,
        affirmative_favours,
        exam_item,
        expected,
        procedure,
    })
}

/// The motion as its layout should read back: no signature, `-0.0` as `+0.0`.
pub fn normalised_motion(m: &Motion) -> Motion {
    let z = |v: f64| if v == 0.0 { 0.0 } else { v };
    let mut m = m.clone();
    m.signature.clear();
    if let Some(p) = m.projection.as_mut() {
        if let Some(e) = p.exam_item.as_mut() {
            for l in &mut e.quantile_levels {
                *l = z(*l);
            }
        }
        if let Some(e) = p.expected.as_mut() {
            e.value = e.value.map(z);
        }
    }
    m
}
