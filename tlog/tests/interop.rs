//! Our notes, checkpoints, cosignatures and proofs checked by independent implementations
//! of the same C2SP formats and of RFC 6962 (the `signed_note` and `tlog_tiles` crates, a
//! port of Go's `golang.org/x/mod/sumdb`), and theirs by ours; then the published vectors
//! (`testvectors/tlog-v1.json`, docs/WIRE.md "Transparency log"). Run with
//! `PANEL_WRITE_VECTORS=1` to (re)write the vector file.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::SigningKey;
use panel_tlog::merkle::{Log, leaf_hash};
use panel_tlog::note::{Note, NoteSigner, TYPE_COSIGNATURE_V1, VerifierKey};
use panel_tlog::{Checkpoint, Cosigner};
use serde_json::{Value, json};

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testvectors/tlog-v1.json");

fn seed(start: u8) -> [u8; 32] {
    std::array::from_fn(|i| start.wrapping_add(i as u8))
}

fn log_signer() -> NoteSigner {
    NoteSigner::new(
        "crucible-panel.example/log",
        SigningKey::from_bytes(&seed(100)),
    )
    .expect("log")
}

fn witness() -> Cosigner {
    Cosigner::new("witness.org-b.example", SigningKey::from_bytes(&seed(200))).expect("witness")
}

fn log_of(n: usize) -> Log {
    let mut l = Log::new();
    for i in 0..n {
        l.append(format!("entry {i}").as_bytes());
    }
    l
}

/// A cosignature verifier written against the spec for the independent note library: its
/// key ID comes from that library's `key_id`, the signature check from ed25519-dalek.
struct CosignatureVerifier {
    name: String,
    id: u32,
    key: ed25519_dalek::VerifyingKey,
}

impl signed_note::Verifier for CosignatureVerifier {
    fn name(&self) -> &str {
        &self.name
    }
    fn key_id(&self) -> u32 {
        self.id
    }
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        if sig.len() != 72 {
            return false;
        }
        let ts = u64::from_be_bytes(sig[..8].try_into().expect("8 bytes"));
        let mut m = format!("cosignature/v1\ntime {ts}\n").into_bytes();
        m.extend_from_slice(msg);
        let s = ed25519_dalek::Signature::from_bytes(&sig[8..].try_into().expect("64 bytes"));
        self.key.verify_strict(&m, &s).is_ok()
    }
}

fn cosigned_checkpoint() -> Note {
    let l = log_of(13);
    let mut note = Note::new(Checkpoint::new(log_signer().name(), 13, l.root()).body()).expect("n");
    note.add(log_signer().sign(&note.text));
    note.add(witness().cosign(&note.text, 1_764_590_400));
    note
}

#[test]
fn the_independent_library_verifies_our_log_signature_and_cosignature() {
    let note = cosigned_checkpoint();
    let log_vkey = log_signer().verifier().to_string();
    let theirs = signed_note::Note::from_bytes(note.to_text().as_bytes()).expect("they parse ours");
    assert_eq!(theirs.text(), note.text.as_bytes());
    let log_verifier = signed_note::StandardVerifier::new(&log_vkey).expect("they read our vkey");
    let w = witness().verifier();
    let mut typed_key = vec![TYPE_COSIGNATURE_V1];
    typed_key.extend_from_slice(w.key.as_bytes());
    let cosig = CosignatureVerifier {
        name: w.name.clone(),
        id: signed_note::key_id(&w.name, &typed_key),
        key: w.key,
    };
    assert_eq!(cosig.id, w.key_id, "key IDs agree");
    let list = signed_note::VerifierList::new(vec![Box::new(log_verifier), Box::new(cosig)]);
    let (verified, unverified) = theirs.verify(&list).expect("they verify ours");
    assert_eq!((verified.len(), unverified.len()), (2, 0));
    // Their checkpoint parser reads our body.
    let cp = tlog_tiles::Checkpoint::from_bytes(note.text.as_bytes()).expect("they parse the body");
    assert_eq!((cp.origin(), cp.size()), (log_signer().name(), 13));
    assert_eq!(cp.hash().0, log_of(13).root());
    // A tampered note is refused by them too.
    let forged = note.to_text().replace("\n13\n", "\n14\n");
    let forged = signed_note::Note::from_bytes(forged.as_bytes()).expect("parses");
    assert!(forged.verify(&list).is_err());
}

#[test]
fn we_verify_a_note_signed_by_the_independent_library() {
    let key = SigningKey::from_bytes(&seed(7));
    let name = "other-implementation.example";
    let mut typed = vec![0x01u8];
    typed.extend_from_slice(key.verifying_key().as_bytes());
    let id = signed_note::key_id(name, &typed);
    let mut secret = vec![0x01u8];
    secret.extend_from_slice(&seed(7));
    let skey = format!("PRIVATE+KEY+{name}+{id:08x}+{}", B64.encode(secret));
    let signer = signed_note::StandardSigner::new(&skey).expect("their signer");
    let mut theirs = signed_note::Note::new(b"signed elsewhere\n", &[]).expect("note");
    theirs.add_sigs(&[&signer]).expect("sign");
    // Their signer's vkey, spelled as the spec says with their key ID.
    let vkey = format!("{name}+{id:08x}+{}", B64.encode(&typed));
    let ours = VerifierKey::parse(&vkey).expect("we read their vkey");
    let note = Note::parse(&theirs.to_bytes()).expect("we parse theirs");
    assert_eq!(note.verify(&[ours]).expect("we verify theirs").len(), 1);
}

#[test]
fn their_rfc6962_checks_accept_our_inclusion_and_consistency_proofs() {
    let l = log_of(70);
    for n in 1..=70u64 {
        let root = tlog_tiles::Hash(l.root_at(n).expect("root"));
        for i in (0..n).step_by(3) {
            let proof: Vec<tlog_tiles::Hash> = l
                .inclusion_proof(i, n)
                .expect("proof")
                .into_iter()
                .map(tlog_tiles::Hash)
                .collect();
            let leaf = tlog_tiles::Hash(leaf_hash(format!("entry {i}").as_bytes()));
            tlog_tiles::check_record(&proof, n, root, i, leaf)
                .unwrap_or_else(|e| panic!("inclusion {i} in {n}: {e:?}"));
        }
        for old in (1..=n).step_by(5) {
            let proof: Vec<tlog_tiles::Hash> = l
                .consistency_proof(old, n)
                .expect("proof")
                .into_iter()
                .map(tlog_tiles::Hash)
                .collect();
            tlog_tiles::check_tree(
                &proof,
                n,
                root,
                old,
                tlog_tiles::Hash(l.root_at(old).expect("root")),
            )
            .unwrap_or_else(|e| panic!("consistency {old} -> {n}: {e:?}"));
        }
    }
}

fn vectors() -> Value {
    let l = log_of(13);
    let note = cosigned_checkpoint();
    let w = witness();
    let proof: Vec<String> = l
        .inclusion_proof(6, 13)
        .expect("proof")
        .iter()
        .map(|h| B64.encode(h))
        .collect();
    let consistency: Vec<String> = l
        .consistency_proof(5, 13)
        .expect("proof")
        .iter()
        .map(|h| B64.encode(h))
        .collect();
    json!({
        "about": "Crucible Panel transparency log vectors (docs/WIRE.md, \"Transparency log\"). Leaves are the UTF-8 strings \"entry 0\" .. \"entry 12\"; hashes per RFC 6962; keys from 32-byte seeds (byte i = start + i).",
        "log": {"name": log_signer().name(), "seed_start": 100, "vkey": log_signer().verifier().to_string()},
        "witness": {"name": w.name(), "seed_start": 200, "vkey": w.verifier().to_string(), "timestamp": 1_764_590_400u64},
        "tree": {"size": 13, "root_b64": B64.encode(l.root()), "root_at_5_b64": B64.encode(l.root_at(5).expect("root"))},
        "checkpoint_text": note.text,
        "cosigned_checkpoint": note.to_text(),
        "inclusion": {"index": 6, "size": 13, "leaf": "entry 6", "proof_b64": proof},
        "consistency": {"old": 5, "new": 13, "proof_b64": consistency},
    })
}

#[test]
fn the_published_vectors_match_this_implementation() {
    let want = vectors();
    if std::env::var_os("PANEL_WRITE_VECTORS").is_some() {
        let text = serde_json::to_string_pretty(&want).expect("json") + "\n";
        std::fs::write(VECTORS, text).expect("write vectors");
    }
    let text = std::fs::read_to_string(VECTORS)
        .expect("testvectors/tlog-v1.json (PANEL_WRITE_VECTORS=1 writes it)");
    let have: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(have, want, "the vectors drifted from the implementation");
    // And the file checks on its own with the independent library.
    let vkey = have["log"]["vkey"].as_str().expect("vkey");
    let v = signed_note::StandardVerifier::new(vkey).expect("vkey");
    let n = signed_note::Note::from_bytes(
        have["cosigned_checkpoint"]
            .as_str()
            .expect("note")
            .as_bytes(),
    )
    .expect("note");
    let (ok, unknown) = n
        .verify(&signed_note::VerifierList::new(vec![Box::new(v)]))
        .expect("verifies");
    assert_eq!((ok.len(), unknown.len()), (1, 1));
}
