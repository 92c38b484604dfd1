//! Our tlog-tiles resources read by an independent implementation: the `tlog_tiles`
//! crate (a port of Go's `golang.org/x/mod/sumdb/tlog`) lists the tiles a tree needs,
//! fetches them from [`Published::get`], checks them against the checkpoint's root, and
//! proves records from them. Its paths carry the tile height (`tile/8/...`, the Go
//! checksum database's form), which tlog-tiles drops; otherwise they are the same.

use panel_tlog::merkle::leaf_hash;
use panel_tlog::tiles::{Published, TilePath};
use panel_tlog::{Checkpoint, Note, NoteSigner};

fn published(n: u64) -> (Published, Vec<Vec<u8>>) {
    let entries: Vec<Vec<u8>> = (0..n).map(|i| format!("entry {i}").into_bytes()).collect();
    let mut log = panel_tlog::Log::new();
    for e in &entries {
        log.append(e);
    }
    let signer = NoteSigner::new(
        "log.example/interop",
        ed25519_dalek::SigningKey::from_bytes(&[3; 32]),
    )
    .expect("signer");
    let mut note = Note::new(Checkpoint::new(signer.name(), n, log.root()).body()).expect("note");
    note.add(signer.sign(&note.text));
    (
        Published::new(entries.clone(), note).expect("publish"),
        entries,
    )
}

fn spec_path(t: &tlog_tiles::Tile) -> String {
    t.path().replacen("tile/8/", "tile/", 1)
}

struct Reader<'a>(&'a Published);

impl tlog_tiles::TileReader for Reader<'_> {
    fn height(&self) -> u8 {
        8
    }

    fn read_tiles(&self, tiles: &[tlog_tiles::Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        tiles
            .iter()
            .map(|t| {
                self.0
                    .get(&spec_path(t))
                    .map(|r| r.body)
                    .map_err(|_| tlog_tiles::Error::InvalidTile)
            })
            .collect()
    }

    fn save_tiles(&self, _: &[tlog_tiles::Tile], _: &[Vec<u8>]) {}
}

#[test]
fn their_reader_checks_our_tiles_and_proves_records_from_them() {
    for n in [1u64, 2, 255, 256, 257, 511, 512, 1000, 65_536, 70_000] {
        let (p, entries) = published(n);
        let cp = Checkpoint::parse_body(&p.checkpoint().text).expect("checkpoint");
        let root = tlog_tiles::Hash(cp.root);
        // The tiles they would publish for this tree are the ones our layout lists.
        let theirs: Vec<String> = tlog_tiles::Tile::new_tiles(8, 0, n)
            .iter()
            .map(spec_path)
            .collect();
        let panel_tlog::tiles::Layout { files, skipped } = p.files();
        assert!(skipped.is_empty());
        let ours: Vec<&str> = files
            .iter()
            .map(|(path, _)| path.as_str())
            .filter(|path| path.starts_with("tile/") && !path.starts_with("tile/entries"))
            .collect();
        assert_eq!(ours, theirs, "size {n}");
        for t in &theirs {
            TilePath::parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
        }

        let reader = Reader(&p);
        let hashes = tlog_tiles::TileHashReader::new(n, root, &reader);
        assert_eq!(
            tlog_tiles::tree_hash(n, &hashes).expect("their tree hash from our tiles"),
            root,
            "size {n}"
        );
        for i in [0, n / 3, n / 2, n - 1] {
            let proof = tlog_tiles::prove_record(n, i, &hashes).expect("proof from our tiles");
            let leaf = tlog_tiles::Hash(leaf_hash(&entries[i as usize]));
            tlog_tiles::check_record(&proof, n, root, i, leaf)
                .unwrap_or_else(|e| panic!("record {i} of {n}: {e:?}"));
        }
    }
}
