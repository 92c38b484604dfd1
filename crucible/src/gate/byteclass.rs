//! Byte classes of a field in one pass, eight bytes at a time.
//!
//! Every Gate rule that looks at a field first needs the same few facts: where the ASCII
//! alphanumeric runs are (lexicon phrases and G4 patterns start there), whether `!` or
//! `?` occur (G7, G8), whether two capitals touch (the only way a G7 candidate can
//! exist) and whether the text is pure ASCII. Computing them together with SWAR lane
//! arithmetic keeps the per-byte cost of a clean field to a few instructions.

const HIGH: u64 = 0x8080_8080_8080_8080;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// `b` in all eight lanes.
const fn lanes(b: u8) -> u64 {
    u64::from_le_bytes([b; 8])
}

/// High bit of each lane set when that lane of `y` (seven-bit lanes) lies in `lo..=hi`.
/// Adding a bias below 0x81 to a seven-bit lane cannot carry into the next lane.
fn in_range(y: u64, lo: u8, hi: u8) -> u64 {
    (y + lanes(0x80 - lo)) & !(y + lanes(0x7f - hi)) & HIGH
}

/// Bit `i` set for every lane `i` whose high bit is set.
fn gather(high: u64) -> u64 {
    ((high >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// True when some lane of `x` equals `b` (the classic zero-lane test on `x ^ b`).
fn has_lane(x: u64, b: u8) -> bool {
    let t = x ^ lanes(b);
    (t.wrapping_sub(lanes(1)) & !t & HIGH) != 0
}

fn load(group: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word[..group.len()].copy_from_slice(group);
    u64::from_le_bytes(word)
}

/// Lane classes of up to eight bytes (missing lanes read as NUL, which is in no class).
struct Classes {
    alnum: u64,
    upper: u64,
}

fn classes(x: u64) -> Classes {
    let ascii = !x & HIGH;
    let y = x & LOW7;
    let digit = in_range(y, b'0', b'9');
    let upper = in_range(y, b'A', b'Z') & ascii;
    // Setting bit 5 folds 'A'..='Z' onto 'a'..='z'.
    let letter = in_range((x | lanes(0x20)) & LOW7, b'a', b'z');
    Classes {
        alnum: gather((digit | letter) & ascii),
        upper: gather(upper),
    }
}

/// Alphanumeric masks, one `u64` per 64 bytes; short texts stay on the stack.
pub(crate) enum Masks {
    Inline([u64; 8], usize),
    Spilled(Vec<u64>),
}

impl Masks {
    pub(crate) fn as_slice(&self) -> &[u64] {
        match self {
            Masks::Inline(m, n) => &m[..*n],
            Masks::Spilled(v) => v,
        }
    }
}

/// The facts about a field the scan needs.
pub(crate) struct ByteProfile {
    /// Bit `i % 64` of mask `i / 64` set when byte `i` is `[0-9A-Za-z]`.
    pub alnum: Masks,
    pub ascii: bool,
    pub bang: bool,
    pub question: bool,
    /// Two ASCII capitals side by side somewhere: a precondition for any G7 candidate.
    pub upper_pair: bool,
}

impl ByteProfile {
    pub(crate) fn of(bytes: &[u8]) -> ByteProfile {
        let chunks = bytes.len().div_ceil(64);
        let mut alnum = if chunks <= 8 {
            Masks::Inline([0; 8], chunks)
        } else {
            Masks::Spilled(vec![0; chunks])
        };
        let masks: &mut [u64] = match &mut alnum {
            Masks::Inline(m, n) => &mut m[..*n],
            Masks::Spilled(v) => v,
        };
        let (mut high, mut bang, mut question, mut upper_pair) = (0u64, false, false, false);
        let mut previous_upper = 0u64;
        for (mask, chunk) in masks.iter_mut().zip(bytes.chunks(64)) {
            let mut m = 0u64;
            for (g, group) in chunk.chunks(8).enumerate() {
                let x = load(group);
                high |= x & HIGH;
                bang |= has_lane(x, b'!');
                question |= has_lane(x, b'?');
                let c = classes(x);
                m |= c.alnum << (8 * g);
                upper_pair |= (c.upper & ((c.upper << 1) | previous_upper)) != 0;
                previous_upper = c.upper >> 7;
            }
            *mask = m;
        }
        ByteProfile {
            alnum,
            ascii: high == 0,
            bang,
            question,
            upper_pair,
        }
    }
}

/// G3 word count for ASCII text: starts of runs that are not `[\t\n\v\f\r ]`.
pub(crate) fn ascii_word_count(bytes: &[u8]) -> usize {
    let mut count = 0;
    let mut previous_word = 0u64;
    for group in bytes.chunks(8) {
        let x = load(group);
        let y = x & LOW7;
        let ws = gather(in_range(y, 0x09, 0x0d) | in_range(y, b' ', b' '));
        let valid = if group.len() == 8 {
            0xff
        } else {
            (1u64 << group.len()) - 1
        };
        let word = !ws & valid;
        count += (word & !((word << 1) | previous_word)).count_ones() as usize;
        previous_word = (word >> 7) & 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_byte() -> Vec<u8> {
        (0..=255u8)
            .chain((0..=255u8).rev())
            .chain(*b"AB ab!?ZZ 09 _")
            .collect()
    }

    #[test]
    fn masks_match_the_byte_tests() {
        let bytes = every_byte();
        for start in [0, 1, 7, 63] {
            let text = &bytes[start..];
            let p = ByteProfile::of(text);
            for (i, &b) in text.iter().enumerate() {
                let bit = (p.alnum.as_slice()[i / 64] >> (i % 64)) & 1;
                assert_eq!(bit == 1, b.is_ascii_alphanumeric(), "byte {b:#x} at {i}");
            }
            assert!(!p.ascii && p.bang && p.question && p.upper_pair);
        }
        let plain = ByteProfile::of(b"Plain text. A B C d");
        assert!(plain.ascii && !plain.bang && !plain.question && !plain.upper_pair);
        // A pair split across two eight-byte groups still counts.
        assert!(ByteProfile::of(b"1234567AB").upper_pair);
        assert!(ByteProfile::of(b"x!").bang);
    }

    #[test]
    fn word_count_matches_a_plain_loop() {
        for text in [
            "",
            " ",
            "one",
            " one two  three ",
            "a\tb\nc\x0bd\x0ce\rf",
            "12345678 12345678 1234567 x",
            "\u{1}\u{2} x",
        ] {
            let want = text
                .split([' ', '\t', '\n', '\x0b', '\x0c', '\r'])
                .filter(|w| !w.is_empty())
                .count();
            assert_eq!(ascii_word_count(text.as_bytes()), want, "{text:?}");
        }
    }
}
