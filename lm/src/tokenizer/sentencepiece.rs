//! SentencePiece BPE from GGUF metadata (`tokenizer.ggml.model = llama`, Gemma 3).
//!
//! The file's scores are merge priorities (higher merges first), not unigram
//! log-probabilities, so a unigram model built from them round-trips text but segments it
//! differently (about twice the real number of tokens on English). The rule here is
//! SentencePiece's BPE encoder: spaces become `▁`; user-defined pieces are atomic symbols,
//! every other character one symbol; then, repeatedly, the adjacent pair whose
//! concatenation is a normal or user-defined piece with the highest score merges, the
//! leftmost on ties; a symbol that is no piece is spelled as `<0xXX>` byte tokens.
//! Checked against the `sentencepiece` library's ids (testvectors/lm/gemma3-tokens.json,
//! scripts/reference/lm_tokens.py).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use crate::LmError;
use crate::gguf::TokenizerMetadata;

const NORMAL: i32 = 1;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;
const BYTE: i32 = 6;

/// A SentencePiece BPE tokenizer.
#[derive(Debug)]
pub struct SentencePiece {
    pieces: Vec<String>,
    types: Vec<i32>,
    scores: Vec<f32>,
    /// Pieces that may be the result of a merge (normal and user-defined) -> id.
    mergeable: HashMap<String, u32>,
    /// `<0xXX>` byte tokens by byte value.
    bytes: [Option<u32>; 256],
    /// User-defined pieces by first character, longest first: atomic symbols.
    user_defined: HashMap<char, Vec<u32>>,
    /// Control pieces by first character, longest first: split out of text only when the
    /// caller asks for special tokens (a chat template's markers).
    control: HashMap<char, Vec<u32>>,
    add_space_prefix: bool,
    unknown: Option<u32>,
}

/// A merge candidate: the pair starting at symbol `left`, whose merged text is `len`
/// bytes long when pushed (a stale candidate no longer matches and is skipped).
#[derive(Debug, PartialEq)]
struct Candidate {
    score: f32,
    left: usize,
    len: usize,
}

impl Eq for Candidate {}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.left.cmp(&self.left))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One symbol of the text being merged: a byte range, linked to its neighbours.
#[derive(Debug, Clone, Copy)]
struct Symbol {
    start: usize,
    end: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

fn by_first_char(ids: impl Iterator<Item = (u32, String)>) -> HashMap<char, Vec<u32>> {
    let mut map: HashMap<char, Vec<(usize, u32)>> = HashMap::new();
    for (id, piece) in ids {
        if let Some(c) = piece.chars().next() {
            map.entry(c).or_default().push((piece.len(), id));
        }
    }
    map.into_iter()
        .map(|(c, mut v)| {
            v.sort_by_key(|e| std::cmp::Reverse(e.0));
            (c, v.into_iter().map(|(_, id)| id).collect())
        })
        .collect()
}

impl SentencePiece {
    pub fn new(md: &TokenizerMetadata) -> Result<Self, LmError> {
        if md.scores.len() != md.tokens.len() {
            return Err(LmError::Tokenizer(
                "tokenizer.ggml.scores is missing: a SentencePiece BPE tokenizer needs merge scores"
                    .into(),
            ));
        }
        let mut mergeable = HashMap::with_capacity(md.tokens.len());
        let mut bytes = [None; 256];
        for (i, (piece, &ty)) in md.tokens.iter().zip(&md.types).enumerate() {
            let id = i as u32;
            match ty {
                NORMAL | USER_DEFINED => {
                    mergeable.entry(piece.clone()).or_insert(id);
                }
                BYTE => {
                    if let Some(b) = parse_byte_piece(piece) {
                        bytes[usize::from(b)] = Some(id);
                    }
                }
                _ => {}
            }
        }
        let of_type = |want: i32| {
            md.tokens
                .iter()
                .zip(&md.types)
                .enumerate()
                .filter(move |(_, (p, t))| **t == want && !p.is_empty())
                .map(|(i, (p, _))| (i as u32, p.clone()))
        };
        let unknown = md.types.iter().position(|&t| t == 2).map(|i| i as u32);
        Ok(Self {
            user_defined: by_first_char(of_type(USER_DEFINED)),
            control: by_first_char(of_type(CONTROL)),
            pieces: md.tokens.clone(),
            types: md.types.clone(),
            scores: md.scores.clone(),
            mergeable,
            bytes,
            add_space_prefix: md.add_space_prefix,
            unknown,
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.pieces.len()
    }

    pub fn piece(&self, id: u32) -> Option<&str> {
        self.pieces.get(id as usize).map(String::as_str)
    }

    /// The id of a piece written as text (`" Yes"` finds `▁Yes`).
    pub fn token_id(&self, text: &str) -> Option<u32> {
        let piece = text.replace(' ', "▁");
        self.mergeable.get(&piece).copied().or_else(|| {
            self.pieces
                .iter()
                .position(|p| *p == piece)
                .map(|i| i as u32)
        })
    }

    /// Token ids of `text` (no BOS); with `special`, control pieces written in the text
    /// (`<start_of_turn>`) become their ids instead of being spelled out.
    pub fn encode(&self, text: &str, special: bool) -> Vec<u32> {
        let mut out = Vec::new();
        let mut first = true;
        for (fragment, control) in self.split_control(text, special) {
            if let Some(id) = control {
                out.push(id);
                continue;
            }
            let mut normalized = String::with_capacity(fragment.len() + 3);
            if first && self.add_space_prefix {
                normalized.push('▁');
            }
            normalized.push_str(&fragment.replace(' ', "▁"));
            self.encode_fragment(&normalized, &mut out);
            first = false;
        }
        out
    }

    /// The text split at control pieces (when `special`), each part with its id if it is one.
    fn split_control<'t>(&self, text: &'t str, special: bool) -> Vec<(&'t str, Option<u32>)> {
        if !special || self.control.is_empty() {
            return vec![(text, None)];
        }
        let mut parts = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            let c = rest.chars().next().unwrap_or(' ');
            let hit = self.control.get(&c).and_then(|ids| {
                ids.iter()
                    .copied()
                    .find(|&id| rest.starts_with(self.pieces[id as usize].as_str()))
            });
            match hit {
                Some(id) => {
                    if start < i {
                        parts.push((&text[start..i], None));
                    }
                    parts.push(("", Some(id)));
                    i += self.pieces[id as usize].len();
                    start = i;
                }
                None => i += c.len_utf8(),
            }
        }
        if start < text.len() {
            parts.push((&text[start..], None));
        }
        parts
    }

    fn initial_symbols(&self, text: &str) -> Vec<Symbol> {
        let mut symbols = Vec::with_capacity(text.len());
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            let c = rest.chars().next().unwrap_or(' ');
            let len = self
                .user_defined
                .get(&c)
                .and_then(|ids| {
                    ids.iter()
                        .map(|&id| self.pieces[id as usize].as_str())
                        .find(|p| rest.starts_with(p))
                })
                .map_or(c.len_utf8(), str::len);
            let n = symbols.len();
            symbols.push(Symbol {
                start: i,
                end: i + len,
                prev: n.checked_sub(1),
                next: None,
            });
            if n > 0 {
                symbols[n - 1].next = Some(n);
            }
            i += len;
        }
        symbols
    }

    fn candidate(&self, text: &str, symbols: &[Symbol], left: usize) -> Option<Candidate> {
        let right = symbols[left].next?;
        let (start, end) = (symbols[left].start, symbols[right].end);
        let id = *self.mergeable.get(&text[start..end])?;
        Some(Candidate {
            score: self.scores[id as usize],
            left,
            len: end - start,
        })
    }

    fn encode_fragment(&self, text: &str, out: &mut Vec<u32>) {
        if text.is_empty() {
            return;
        }
        let mut symbols = self.initial_symbols(text);
        let mut agenda: BinaryHeap<Candidate> = (0..symbols.len())
            .filter_map(|i| self.candidate(text, &symbols, i))
            .collect();
        while let Some(c) = agenda.pop() {
            let left = symbols[c.left];
            let Some(right) = left.next else { continue };
            if left.end == left.start || symbols[right].end - left.start != c.len {
                continue; // stale: one side merged since this was pushed
            }
            let after = symbols[right].next;
            symbols[c.left].end = symbols[right].end;
            symbols[c.left].next = after;
            symbols[right].start = symbols[right].end; // emptied
            if let Some(a) = after {
                symbols[a].prev = Some(c.left);
            }
            if let Some(p) = left.prev
                && let Some(cand) = self.candidate(text, &symbols, p)
            {
                agenda.push(cand);
            }
            if let Some(cand) = self.candidate(text, &symbols, c.left) {
                agenda.push(cand);
            }
        }
        let mut at = Some(0);
        while let Some(i) = at {
            let s = symbols[i];
            let piece = &text[s.start..s.end];
            match self.mergeable.get(piece) {
                Some(&id) => out.push(id),
                None => {
                    for b in piece.bytes() {
                        if let Some(id) = self.bytes[usize::from(b)].or(self.unknown) {
                            out.push(id);
                        }
                    }
                }
            }
            at = s.next;
        }
    }

    /// Text of `ids`: `▁` back to spaces, byte tokens to their bytes, control pieces
    /// dropped.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            let Some(piece) = self.pieces.get(id as usize) else {
                continue;
            };
            match self.types[id as usize] {
                BYTE => bytes.extend(parse_byte_piece(piece)),
                CONTROL => {}
                _ => bytes.extend_from_slice(piece.replace('▁', " ").as_bytes()),
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// `<0x0A>` -> 10.
fn parse_byte_piece(piece: &str) -> Option<u8> {
    let hex = piece.strip_prefix("<0x")?.strip_suffix('>')?;
    u8::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> SentencePiece {
        // pieces: a, b, c, ab, abc, bc (score favours "bc" over "ab"), ▁, ▁a, <0x21>
        let tokens = [
            "<unk>", "a", "b", "c", "ab", "bc", "abc", "▁", "▁a", "<0x21>", "<ctl>",
        ];
        let scores = [
            0.0, -1.0, -1.0, -1.0, -5.0, -2.0, -3.0, -1.0, -4.0, 0.0, 0.0,
        ];
        let types = [2, 1, 1, 1, 1, 1, 1, 1, 1, 6, 3];
        SentencePiece::new(&TokenizerMetadata {
            kind: "llama".into(),
            tokens: tokens.iter().map(|s| s.to_string()).collect(),
            scores: scores.to_vec(),
            types: types.to_vec(),
            bos: None,
            eos: None,
            add_bos: false,
            add_space_prefix: false,
        })
        .unwrap()
    }

    #[test]
    fn merges_by_score_not_by_length() {
        let t = tiny();
        // "bc" (-2) merges before "ab" (-5); then "a"+"bc" = "abc" (-3).
        assert_eq!(t.encode("abc", false), vec![6]);
        // "ab" alone merges.
        assert_eq!(t.encode("ab", false), vec![4]);
    }

    #[test]
    fn unknown_characters_fall_back_to_bytes_and_controls_split_only_when_asked() {
        let t = tiny();
        assert_eq!(t.encode("a!", false), vec![1, 9]);
        assert_eq!(t.encode(" a", false), vec![8]);
        assert_eq!(t.encode("a<ctl>", true)[1], 10);
        assert_ne!(t.encode("a<ctl>", false)[1], 10);
        assert_eq!(t.decode(&[8, 9, 10]), " a!");
    }
}
