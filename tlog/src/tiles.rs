//! C2SP tlog-tiles: the record as static resources an auditor outside the federation can
//! mirror with any HTTP client and check with any tlog-tiles reader (docs/WIRE.md
//! "tlog-tiles").
//!
//! - `checkpoint`: the signed note (the log's signatures and the witnesses' cosignatures);
//! - `tile/<L>/<N>[.p/<W>]`: hash tiles. Level 0 holds leaf hashes; a hash at level
//!   `L + 1` is the RFC 6962 root of one *full* tile at level `L`, so a tile is a perfect
//!   subtree of height 8 cut off at its leaves. The rightmost tile of a level is partial
//!   (`.p/<W>`, 1 to 255 hashes) and never hashed into the level above;
//! - `tile/entries/<N>[.p/<W>]`: entry bundles, each entry a big-endian `u16` length and
//!   the leaf's bytes.
//!
//! `<N>` is written in 3-digit groups, every group but the last prefixed with `x`
//! (1234067 is `x001/x234/067`), so a filesystem can hold the layout and a static file
//! server can serve it unchanged.
//!
//! The spec's bundle cannot carry an entry longer than 65,535 bytes, and some of the
//! record's entries are longer (an exam's reveals, an outcome with many rulings). The spec
//! lets a log serve entries in another encoding at another URL, so every bundle is also
//! served at `tile/entries32/<N>[.p/<W>]` with big-endian `u32` lengths; the standard
//! bundle is served wherever all its entries fit.
//!
//! Pure: no I/O. [`Published`] answers a request path with the resource's bytes, and lists
//! the whole static layout for a writer.

use crate::merkle::{Hash, leaf_hash, root_of};
use crate::{Checkpoint, Note};

/// Hashes per full tile (a tile's height is 8).
pub const TILE_WIDTH: u64 = 256;
/// The longest entry the spec's bundle encoding can carry (`u16` length prefix).
pub const MAX_BUNDLE_ENTRY: usize = u16::MAX as usize;
/// The highest level a hash tile path may name (tlog-tiles: 0 to 63).
pub const MAX_LEVEL: u8 = 63;
/// Longest path [`TilePath::parse`] reads: `u64::MAX` takes 7 groups, so anything longer
/// is not a tile; refusing early keeps a hostile path from costing work.
const MAX_PATH_LEN: usize = 64;

/// What a tile path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TileKind {
    /// `tile/<L>/...`: Merkle tree hashes at tile level `L`.
    Hashes(u8),
    /// `tile/entries/...`: the spec's entry bundle (`u16` lengths).
    Entries,
    /// `tile/entries32/...`: the same entries with `u32` lengths, for entries the spec's
    /// bundle cannot carry.
    WideEntries,
}

/// One tile or bundle: its kind, index within the level, and width (256 for a full one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TilePath {
    pub kind: TileKind,
    pub index: u64,
    pub width: u16,
}

/// Why a request path is not a tile path (an HTTP server answers 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TilePathError {
    #[error("a tile path starts with tile/")]
    NotATile,
    #[error("the path is longer than any tile path")]
    TooLong,
    #[error("the level {0:?} is not a decimal from 0 to 63 without leading zeroes")]
    Level(String),
    #[error("the index is missing")]
    NoIndex,
    #[error("index element {0:?} is not x and 3 digits (or 3 digits, last)")]
    IndexElement(String),
    #[error("the index has a leading x000 element; an index is written in its shortest form")]
    NotShortest,
    #[error("the index does not fit in 64 bits")]
    IndexTooLarge,
    #[error("the width {0:?} is not a decimal from 1 to 255 without leading zeroes")]
    Width(String),
}

/// Encodes a tile index as tlog-tiles path elements: 3-digit groups, all but the last
/// prefixed with `x`.
pub fn encode_index(mut n: u64) -> String {
    let mut out = format!("{:03}", n % 1000);
    while n >= 1000 {
        n /= 1000;
        out = format!("x{:03}/{out}", n % 1000);
    }
    out
}

fn three_digits(s: &str) -> Option<u64> {
    (s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// A decimal without leading zeroes (a lone `0` is fine) in `lo..=hi`.
fn small_decimal(s: &str, lo: u64, hi: u64) -> Option<u64> {
    let canonical = !s.is_empty()
        && s.len() <= 3
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s == "0" || !s.starts_with('0'));
    canonical
        .then(|| s.parse::<u64>().ok())
        .flatten()
        .filter(|v| (lo..=hi).contains(v))
}

impl TilePath {
    /// A full tile or bundle.
    pub fn full(kind: TileKind, index: u64) -> Self {
        TilePath {
            kind,
            index,
            width: TILE_WIDTH as u16,
        }
    }

    pub fn is_full(&self) -> bool {
        u64::from(self.width) == TILE_WIDTH
    }

    /// Tree level of the hashes (or entries, level 0) this path names.
    pub fn level(&self) -> u8 {
        match self.kind {
            TileKind::Hashes(l) => l,
            TileKind::Entries | TileKind::WideEntries => 0,
        }
    }

    /// Parses a path relative to the log's prefix (`tile/0/x001/234.p/7`). Only the
    /// spec's canonical spelling is accepted, so every resource has one name.
    pub fn parse(path: &str) -> Result<Self, TilePathError> {
        if path.len() > MAX_PATH_LEN {
            return Err(TilePathError::TooLong);
        }
        let rest = path.strip_prefix("tile/").ok_or(TilePathError::NotATile)?;
        let mut parts: Vec<&str> = rest.split('/').collect();
        let kind = match parts.first().copied() {
            Some("entries") => TileKind::Entries,
            Some("entries32") => TileKind::WideEntries,
            Some(l) => TileKind::Hashes(
                small_decimal(l, 0, u64::from(MAX_LEVEL))
                    .and_then(|l| u8::try_from(l).ok())
                    .ok_or_else(|| TilePathError::Level(l.to_string()))?,
            ),
            None => return Err(TilePathError::NotATile),
        };
        parts.remove(0);
        // `<N>.p/<W>`: the width is the last element, after an index element ending `.p`.
        let mut width = TILE_WIDTH as u16;
        if parts.len() >= 2
            && let Some(last_index) = parts[parts.len() - 2].strip_suffix(".p")
        {
            let w = parts[parts.len() - 1];
            width = small_decimal(w, 1, TILE_WIDTH - 1)
                .and_then(|w| u16::try_from(w).ok())
                .ok_or_else(|| TilePathError::Width(w.to_string()))?;
            let at = parts.len() - 2;
            parts.truncate(at);
            parts.push(last_index);
        }
        let (last, groups) = parts.split_last().ok_or(TilePathError::NoIndex)?;
        let mut index: u64 = 0;
        for (i, g) in groups.iter().enumerate() {
            let digits = g
                .strip_prefix('x')
                .and_then(three_digits)
                .ok_or_else(|| TilePathError::IndexElement(g.to_string()))?;
            if i == 0 && digits == 0 {
                return Err(TilePathError::NotShortest);
            }
            index = push_group(index, digits)?;
        }
        let digits =
            three_digits(last).ok_or_else(|| TilePathError::IndexElement(last.to_string()))?;
        index = push_group(index, digits)?;
        Ok(TilePath { kind, index, width })
    }

    /// The path relative to the log's prefix.
    pub fn to_path(&self) -> String {
        let kind = match self.kind {
            TileKind::Hashes(l) => l.to_string(),
            TileKind::Entries => "entries".into(),
            TileKind::WideEntries => "entries32".into(),
        };
        let mut p = format!("tile/{kind}/{}", encode_index(self.index));
        if !self.is_full() {
            p.push_str(&format!(".p/{}", self.width));
        }
        p
    }
}

impl std::fmt::Display for TilePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_path())
    }
}

fn push_group(index: u64, digits: u64) -> Result<u64, TilePathError> {
    index
        .checked_mul(1000)
        .and_then(|i| i.checked_add(digits))
        .ok_or(TilePathError::IndexTooLarge)
}

/// The hashes of every tile of one tree: `levels[l][j]` is the RFC 6962 root of leaves
/// `j * 256^l .. (j + 1) * 256^l`, for every such range the tree holds whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileSet {
    levels: Vec<Vec<Hash>>,
}

impl TileSet {
    /// The tiles of the tree whose leaf hashes are `leaves`, in order.
    pub fn new(leaves: Vec<Hash>) -> Self {
        let mut levels = vec![leaves];
        loop {
            let below = &levels[levels.len() - 1];
            if (below.len() as u64) < TILE_WIDTH {
                break;
            }
            let above: Vec<Hash> = below
                .chunks_exact(TILE_WIDTH as usize)
                .map(root_of)
                .collect();
            levels.push(above);
        }
        TileSet { levels }
    }

    /// Tree size.
    pub fn size(&self) -> u64 {
        self.levels[0].len() as u64
    }

    /// The tree's root (RFC 6962 MTH of every leaf).
    pub fn root(&self) -> Hash {
        root_of(&self.levels[0])
    }

    /// Hashes at tile level `level`: `floor(size / 256^level)` of them.
    fn level(&self, level: u8) -> &[Hash] {
        self.levels
            .get(usize::from(level))
            .map_or(&[], |l| l.as_slice())
    }

    /// Positions `index * 256 .. index * 256 + width` of a level, if the tree holds them.
    fn span(&self, level: u8, index: u64, width: u16) -> Option<std::ops::Range<usize>> {
        let start = index.checked_mul(TILE_WIDTH)?;
        let end = start.checked_add(u64::from(width))?;
        let len = self.level(level).len() as u64;
        (width > 0 && end <= len).then_some(start as usize..end as usize)
    }

    /// The bytes of hash tile `level`/`index` of `width` hashes, if the tree holds that
    /// many (a partial tile of any width up to what the tree holds is the prefix of the
    /// full one, so its bytes never change).
    pub fn tile(&self, level: u8, index: u64, width: u16) -> Option<Vec<u8>> {
        let span = self.span(level, index, width)?;
        Some(self.level(level)[span].concat())
    }

    /// The tiles a static copy of this tree holds: every full tile and, for each level
    /// whose hash count is not a multiple of 256, the partial tile at the current size.
    pub fn paths(&self, kind: impl Fn(u8) -> Option<TileKind>) -> Vec<TilePath> {
        let mut out = Vec::new();
        for (l, hashes) in self.levels.iter().enumerate() {
            let Some(kind) = u8::try_from(l).ok().and_then(&kind) else {
                continue;
            };
            let n = hashes.len() as u64;
            out.extend((0..n / TILE_WIDTH).map(|i| TilePath::full(kind, i)));
            if !n.is_multiple_of(TILE_WIDTH) {
                out.push(TilePath {
                    kind,
                    index: n / TILE_WIDTH,
                    width: (n % TILE_WIDTH) as u16,
                });
            }
        }
        out
    }
}

/// Why a bundle cannot be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error(
        "entry {index} is {len} bytes; a tlog-tiles bundle carries at most {MAX_BUNDLE_ENTRY} (tile/entries32 carries it)"
    )]
    EntryTooLarge { index: u64, len: usize },
    #[error("the bundle ends inside an entry")]
    Truncated,
}

/// The spec's entry bundle: each entry as a big-endian `u16` length and its bytes.
/// `first` is the index of the first entry, for the error.
pub fn entry_bundle<E: AsRef<[u8]>>(first: u64, entries: &[E]) -> Result<Vec<u8>, BundleError> {
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let e = e.as_ref();
        let len = u16::try_from(e.len()).map_err(|_| BundleError::EntryTooLarge {
            index: first + i as u64,
            len: e.len(),
        })?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(e);
    }
    Ok(out)
}

/// The wide bundle (`tile/entries32`): each entry as a big-endian `u32` length and its
/// bytes. Entries longer than 4 GiB do not occur (a replica refuses far smaller commands).
pub fn wide_bundle<E: AsRef<[u8]>>(entries: &[E]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let e = e.as_ref();
        out.extend_from_slice(&(e.len() as u32).to_be_bytes());
        out.extend_from_slice(e);
    }
    out
}

/// Splits a bundle whose lengths are `prefix` bytes (2 for the spec's, 4 for the wide
/// one) into its entries.
pub fn split_bundle(bytes: &[u8], prefix: usize) -> Result<Vec<&[u8]>, BundleError> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        if rest.len() < prefix {
            return Err(BundleError::Truncated);
        }
        let len = rest[..prefix]
            .iter()
            .fold(0usize, |n, &b| (n << 8) | usize::from(b));
        let body = rest
            .get(prefix..prefix + len)
            .ok_or(BundleError::Truncated)?;
        out.push(body);
        rest = &rest[prefix + len..];
    }
    Ok(out)
}

/// Why a record cannot be published as tiles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    #[error("the checkpoint is not a checkpoint note: {0}")]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
    #[error("the checkpoint covers {size} entries but only {have} were given")]
    TooFewEntries { size: u64, have: u64 },
    #[error("the entries' root at size {size} is not the checkpoint's root")]
    RootMismatch { size: u64 },
}

/// How a resource may be cached (tlog-tiles: the checkpoint changes, tiles never do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// The checkpoint: cache a few seconds at most.
    Mutable,
    /// A tile or bundle: its bytes never change.
    Immutable,
}

/// One resource's bytes and how it may be cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub body: Vec<u8>,
    pub caching: Caching,
}

/// Where [`Published::locate`] found a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// A checkpoint or hash tile.
    Bytes(Resource),
    /// An entry bundle (always immutable).
    Bundle(BundleSpan),
}

/// The entries of one bundle and the width of its length prefixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleSpan {
    /// Entry indices.
    pub span: std::ops::Range<usize>,
    /// Bytes of each big-endian length: 2 for the spec's bundle, 4 for `entries32`.
    pub prefix: usize,
}

impl BundleSpan {
    /// The bundle's length in bytes.
    pub fn len(&self, published: &Published) -> u64 {
        self.span
            .clone()
            .filter_map(|i| published.entry(i))
            .map(|e| (self.prefix + e.len()) as u64)
            .sum()
    }

    /// Whether the bundle has no entries (never, for a bundle [`Published::locate`] found).
    pub fn is_empty(&self) -> bool {
        self.span.is_empty()
    }

    /// The bundle as one frame per entry: its length prefix and its bytes.
    pub fn frames<'a>(&'a self, published: &'a Published) -> impl Iterator<Item = Vec<u8>> + 'a {
        (0..self.span.len()).filter_map(move |k| self.frame(published, k))
    }

    /// Frame `k` of the bundle (entry `span.start + k`), for a server that sends them one
    /// at a time.
    pub fn frame(&self, published: &Published, k: usize) -> Option<Vec<u8>> {
        let i = self
            .span
            .start
            .checked_add(k)
            .filter(|i| *i < self.span.end)?;
        let e = published.entry(i)?;
        let len = (e.len() as u64).to_be_bytes();
        let mut frame = Vec::with_capacity(self.prefix + e.len());
        frame.extend_from_slice(&len[8 - self.prefix..]);
        frame.extend_from_slice(e);
        Some(frame)
    }
}

/// Why a request gets no resource.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GetError {
    /// Not a path of the layout (400).
    #[error("{0}")]
    BadPath(#[from] TilePathError),
    /// A well-formed path the tree does not hold (yet) (404).
    #[error("the tree of size {size} does not hold {path}")]
    Beyond { path: String, size: u64 },
    /// A spec bundle one of whose entries is too long for it (404; the wide one serves it).
    #[error("{0}")]
    Bundle(#[from] BundleError),
}

/// One entry's bytes with its RFC 6962 leaf hash, computed once, when it is made: an owner
/// that publishes a growing log keeps its entries as these, so each new snapshot shares
/// the bytes (a reference count) and hashes nothing it hashed before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    bytes: std::sync::Arc<[u8]>,
    hash: Hash,
}

impl Leaf {
    pub fn new(bytes: impl Into<std::sync::Arc<[u8]>>) -> Self {
        let bytes = bytes.into();
        let hash = leaf_hash(&bytes);
        Leaf { bytes, hash }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn hash(&self) -> &Hash {
        &self.hash
    }
}

/// A tree's entries with its checkpoint, ready to serve as tlog-tiles resources.
#[derive(Debug, Clone)]
pub struct Published {
    tiles: TileSet,
    entries: Vec<Leaf>,
    checkpoint: Note,
}

impl Published {
    /// Publishes the first `size` entries, `size` being the checkpoint's; refuses a
    /// checkpoint whose root is not these entries' root, so a server never shows tiles
    /// that disagree with the signed head.
    pub fn new(entries: Vec<Vec<u8>>, checkpoint: Note) -> Result<Self, PublishError> {
        Self::from_leaves(entries.into_iter().map(Leaf::new).collect(), checkpoint)
    }

    /// [`Self::new`] for entries already hashed.
    pub fn from_leaves(mut entries: Vec<Leaf>, checkpoint: Note) -> Result<Self, PublishError> {
        let cp = Checkpoint::parse_body(&checkpoint.text)?;
        let have = entries.len() as u64;
        if have < cp.size {
            return Err(PublishError::TooFewEntries {
                size: cp.size,
                have,
            });
        }
        entries.truncate(cp.size as usize);
        let tiles = TileSet::new(entries.iter().map(|e| e.hash).collect());
        if tiles.root() != cp.root {
            return Err(PublishError::RootMismatch { size: cp.size });
        }
        Ok(Published {
            tiles,
            entries,
            checkpoint,
        })
    }

    /// Tree size (the checkpoint's).
    pub fn size(&self) -> u64 {
        self.tiles.size()
    }

    /// The signed checkpoint served at `checkpoint`.
    pub fn checkpoint(&self) -> &Note {
        &self.checkpoint
    }

    /// The resource at `path`, relative to the prefix (`checkpoint`, `tile/...`), with
    /// its bytes.
    pub fn get(&self, path: &str) -> Result<Resource, GetError> {
        match self.locate(path)? {
            Located::Bytes(r) => Ok(r),
            Located::Bundle(b) => Ok(Resource {
                body: b.frames(self).flatten().collect(),
                caching: Caching::Immutable,
            }),
        }
    }

    /// The resource at `path`: a checkpoint or hash tile as bytes, an entry bundle as the
    /// entries it holds, so a server can send a bundle entry by entry instead of building
    /// the whole of it (a bundle of exam sittings is tens of megabytes) per request.
    pub fn locate(&self, path: &str) -> Result<Located, GetError> {
        if path == "checkpoint" {
            return Ok(Located::Bytes(Resource {
                body: self.checkpoint.to_text().into_bytes(),
                caching: Caching::Mutable,
            }));
        }
        let tile = TilePath::parse(path)?;
        let beyond = || GetError::Beyond {
            path: tile.to_path(),
            size: self.size(),
        };
        match tile.kind {
            TileKind::Hashes(level) => Ok(Located::Bytes(Resource {
                body: self
                    .tiles
                    .tile(level, tile.index, tile.width)
                    .ok_or_else(beyond)?,
                caching: Caching::Immutable,
            })),
            TileKind::Entries | TileKind::WideEntries => {
                let span = self
                    .tiles
                    .span(0, tile.index, tile.width)
                    .ok_or_else(beyond)?;
                let prefix = if tile.kind == TileKind::Entries {
                    if let Some((i, e)) = self.entries[span.clone()]
                        .iter()
                        .enumerate()
                        .find(|(_, e)| e.bytes.len() > MAX_BUNDLE_ENTRY)
                    {
                        return Err(BundleError::EntryTooLarge {
                            index: (span.start + i) as u64,
                            len: e.bytes.len(),
                        }
                        .into());
                    }
                    2
                } else {
                    4
                };
                Ok(Located::Bundle(BundleSpan { span, prefix }))
            }
        }
    }

    /// Entry `index` (below [`Self::size`]).
    pub fn entry(&self, index: usize) -> Option<&[u8]> {
        self.entries.get(index).map(Leaf::bytes)
    }

    /// The static layout: the checkpoint, every full tile and bundle, and the partial ones
    /// at this size. A spec bundle with an entry too long for it is left out (its
    /// `entries32` form is there) and listed in [`Layout::skipped`].
    pub fn files(&self) -> Layout {
        let mut files = vec![(
            "checkpoint".to_string(),
            self.checkpoint.to_text().into_bytes(),
        )];
        let mut skipped = Vec::new();
        let mut paths = self.tiles.paths(|l| Some(TileKind::Hashes(l)));
        for kind in [TileKind::Entries, TileKind::WideEntries] {
            paths.extend(self.tiles.paths(|l| (l == 0).then_some(kind)));
        }
        for p in paths {
            let path = p.to_path();
            match self.get(&path) {
                Ok(r) => files.push((path, r.body)),
                Err(GetError::Bundle(e)) => skipped.push((path, e)),
                // Every listed path is held by construction.
                Err(_) => {}
            }
        }
        Layout { files, skipped }
    }
}

/// The files of a static copy, from [`Published::files`].
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// `(path relative to the prefix, bytes)`, the checkpoint first.
    pub files: Vec<(String, Vec<u8>)>,
    /// Spec bundles left out, with why.
    pub skipped: Vec<(String, BundleError)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoteSigner;
    use ed25519_dalek::SigningKey;

    fn entry(i: u64) -> Vec<u8> {
        format!("entry {i}").into_bytes()
    }

    fn published(n: u64) -> Published {
        let entries: Vec<Vec<u8>> = (0..n).map(entry).collect();
        let root = root_of(&entries.iter().map(|e| leaf_hash(e)).collect::<Vec<_>>());
        let signer =
            NoteSigner::new("log.example/t", SigningKey::from_bytes(&[7; 32])).expect("signer");
        let mut note = Note::new(Checkpoint::new(signer.name(), n, root).body()).expect("note");
        note.add(signer.sign(&note.text));
        Published::new(entries, note).expect("publish")
    }

    #[test]
    fn index_encoding_follows_the_spec_examples() {
        assert_eq!(encode_index(1234067), "x001/x234/067");
        assert_eq!(encode_index(0), "000");
        assert_eq!(encode_index(999), "999");
        assert_eq!(encode_index(1000), "x001/000");
        assert_eq!(encode_index(u64::MAX), "x018/x446/x744/x073/x709/x551/615");
        for n in [0, 5, 999, 1000, 1234067, 1_000_000, u64::MAX] {
            let p = TilePath {
                kind: TileKind::Hashes(3),
                index: n,
                width: 17,
            };
            assert_eq!(TilePath::parse(&p.to_path()), Ok(p));
        }
        assert_eq!(
            TilePath::parse("tile/0/x001/x234/067.p/8"),
            Ok(TilePath {
                kind: TileKind::Hashes(0),
                index: 1234067,
                width: 8
            })
        );
        assert_eq!(
            TilePath::parse("tile/entries/x001/x234/067"),
            Ok(TilePath::full(TileKind::Entries, 1234067))
        );
    }

    #[test]
    fn only_canonical_paths_parse() {
        for bad in [
            "tile",
            "tile/",
            "tile/0",
            "tile/0/",
            "tile/00/000",
            "tile/64/000",
            "tile/-1/000",
            "tile/+1/000",
            "tile/0/0",
            "tile/0/0000",
            "tile/0/1a3",
            "tile/0/x000/001",
            "tile/0/001/002",
            "tile/0/x001",
            "tile/0/000.p/0",
            "tile/0/000.p/256",
            "tile/0/000.p/07",
            "tile/0/000.p/",
            "tile/0/000.p",
            "tile/0/000/",
            "tile/0/x018/x446/x744/x073/x709/x551/616",
            "tile/0/x999/x999/x999/x999/x999/x999/x999/999",
            "tile/data/000",
            "tile/0/\u{663}\u{663}\u{663}",
            "tiles/0/000",
            "/tile/0/000",
        ] {
            assert!(TilePath::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn tiles_hold_the_merkle_modules_hashes() {
        let n = 256 * 256 + 3 * 256 + 5;
        let leaves: Vec<Hash> = (0..n).map(|i| leaf_hash(&entry(i))).collect();
        let mut log = crate::Log::new();
        for l in &leaves {
            log.append_leaf(*l);
        }
        let t = TileSet::new(leaves.clone());
        assert_eq!(t.root(), log.root());
        // Level 0: leaf hashes.
        let tile = t.tile(0, 1, 256).expect("full tile");
        assert_eq!(tile, leaves[256..512].concat());
        // Level 1: each hash the root of a full level-0 tile.
        let tile = t.tile(1, 0, 256).expect("level 1");
        for j in 0..256 {
            let lo = j * 256;
            assert_eq!(
                tile[j * 32..(j + 1) * 32],
                root_of(&leaves[lo..lo + 256]),
                "hash {j}"
            );
        }
        // Level 2: one hash, the root of the first 65,536 leaves: a partial tile of width 1.
        assert_eq!(t.tile(2, 0, 1), Some(root_of(&leaves[..65536]).to_vec()));
        assert_eq!(t.tile(2, 0, 2), None);
        assert_eq!(t.tile(3, 0, 1), None);
        // Level 1 partial: 3 full level-0 tiles past the first full level-1 tile.
        let p = t.tile(1, 1, 3).expect("level 1 partial");
        assert_eq!(p.len(), 3 * 32);
        assert_eq!(p[..32], root_of(&leaves[65536..65536 + 256]));
        assert_eq!(t.tile(1, 1, 4), None);
        // Level 0 partial: the last 5 leaves.
        let last = t.tile(0, 259, 5).expect("partial");
        assert_eq!(last, leaves[259 * 256..].concat());
        assert_eq!(t.tile(0, 259, 6), None);
        assert_eq!(t.tile(0, 260, 1), None);
        assert_eq!(t.tile(0, u64::MAX, 255), None);
    }

    /// The spec's example: a tree of 70,000 has 273 full level-0 tiles and one of width
    /// 112, one full level-1 tile and one of width 17, and a level-2 tile of width 1; a
    /// tree of 256 has one full level-0 tile and a level-1 tile of width 1.
    #[test]
    fn the_layout_matches_the_spec_examples() {
        let count = |n: u64| {
            let t = TileSet::new(vec![[0; 32]; n as usize]);
            let paths = t.paths(|l| Some(TileKind::Hashes(l)));
            let mut by_level = std::collections::BTreeMap::<u8, (u64, Vec<u16>)>::new();
            for p in paths {
                let e = by_level.entry(p.level()).or_default();
                if p.is_full() {
                    e.0 += 1;
                } else {
                    e.1.push(p.width);
                }
            }
            by_level.into_iter().collect::<Vec<_>>()
        };
        assert_eq!(
            count(70_000),
            vec![(0, (273, vec![112])), (1, (1, vec![17])), (2, (0, vec![1]))]
        );
        assert_eq!(count(256), vec![(0, (1, vec![])), (1, (0, vec![1]))]);
        assert_eq!(count(0), vec![]);
        assert_eq!(count(1), vec![(0, (0, vec![1]))]);
    }

    #[test]
    fn bundles_hash_to_the_level_0_tile() {
        let p = published(600);
        let tile = p.get("tile/0/001").expect("tile").body;
        let bundle = p.get("tile/entries/001").expect("bundle").body;
        let entries = split_bundle(&bundle, 2).expect("split");
        assert_eq!(entries.len(), 256);
        let hashes: Vec<u8> = entries.iter().flat_map(|e| leaf_hash(e)).collect();
        assert_eq!(hashes, tile);
        assert_eq!(entries[0], entry(256).as_slice());
        let wide = p.get("tile/entries32/002.p/88").expect("wide").body;
        let wide = split_bundle(&wide, 4).expect("split wide");
        assert_eq!(wide.len(), 88);
        assert_eq!(wide[87], entry(599).as_slice());
        assert!(matches!(
            p.get("tile/entries/002.p/89"),
            Err(GetError::Beyond { .. })
        ));
        assert!(matches!(
            p.get("tile/entries/002"),
            Err(GetError::Beyond { .. })
        ));
        assert!(matches!(p.get("tile/0/x"), Err(GetError::BadPath(_))));
        assert!(matches!(p.get("nothing"), Err(GetError::BadPath(_))));
        let cp = p.get("checkpoint").expect("checkpoint");
        assert_eq!(cp.caching, Caching::Mutable);
        assert!(
            String::from_utf8(cp.body)
                .expect("utf8")
                .starts_with("log.example/t\n600\n")
        );
    }

    #[test]
    fn a_long_entry_is_served_in_the_wide_bundle_only() {
        let mut entries: Vec<Vec<u8>> = (0..3).map(entry).collect();
        entries[1] = vec![b'a'; MAX_BUNDLE_ENTRY + 1];
        assert_eq!(
            entry_bundle(0, &entries),
            Err(BundleError::EntryTooLarge {
                index: 1,
                len: MAX_BUNDLE_ENTRY + 1
            })
        );
        entries[1].pop();
        let ok = entry_bundle(0, &entries).expect("fits");
        assert_eq!(
            split_bundle(&ok, 2).expect("split")[1].len(),
            MAX_BUNDLE_ENTRY
        );
        entries[1].push(b'a');
        let root = root_of(&entries.iter().map(|e| leaf_hash(e)).collect::<Vec<_>>());
        let mut note = Note::new(Checkpoint::new("o", 3, root).body()).expect("note");
        let s = NoteSigner::new("o", SigningKey::from_bytes(&[1; 32])).expect("signer");
        note.add(s.sign(&note.text));
        let p = Published::new(entries, note).expect("publish");
        let Layout { files, skipped } = p.files();
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["checkpoint", "tile/0/000.p/3", "tile/entries32/000.p/3"]
        );
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].0, "tile/entries/000.p/3");
    }

    #[test]
    fn a_checkpoint_must_match_the_entries() {
        let good = published(10);
        let mut note = good.checkpoint().clone();
        note.text = note.text.replace("\n10\n", "\n11\n");
        assert!(matches!(
            Published::new((0..10).map(entry).collect(), note.clone()),
            Err(PublishError::TooFewEntries { size: 11, have: 10 })
        ));
        assert!(matches!(
            Published::new((0..11).map(entry).collect(), note),
            Err(PublishError::RootMismatch { size: 11 })
        ));
        // More entries than the checkpoint covers: only the covered ones are published.
        let p = Published::new((0..20).map(entry).collect(), good.checkpoint().clone())
            .expect("prefix");
        assert_eq!(p.size(), 10);
        assert!(p.get("tile/entries32/000.p/11").is_err());
    }

    #[test]
    fn split_bundle_refuses_truncation() {
        assert_eq!(split_bundle(&[0], 2), Err(BundleError::Truncated));
        assert_eq!(split_bundle(&[0, 3, 1, 2], 2), Err(BundleError::Truncated));
        assert_eq!(split_bundle(&[], 2), Ok(vec![]));
    }
}
