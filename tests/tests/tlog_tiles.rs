//! An auditor outside the federation (docs/WIRE.md "tlog-tiles"): a reader written here
//! from the C2SP specs (tlog-tiles, tlog-checkpoint, signed-note, tlog-cosignature,
//! tlog-policy) alone, using only an HTTP/1.1 GET over a TCP socket, SHA-256, Ed25519 and
//! base64, and none of this project's code, mirrors a live chartered cluster's record:
//!
//! - from `panel tiles serve` following each of two replicas;
//! - from `panel export --tiles DIR` served by Python's stock `http.server`.
//!
//! It checks the checkpoint's signatures against the trust policy `panel pki init` wrote
//! (the log quorum of replica keys, both organisations' witnesses), fetches every entry
//! bundle and hash tile, checks each tile against hashes it computes from the entries,
//! recomputes the RFC 6962 root and compares it with the checkpoint, and reads the
//! entries as the record (the charter first, then the admissions written). The record then
//! grows and each server follows it; malformed and out-of-tree requests get 400, 404 or
//! 405, and the server keeps answering. A second test serves a record whose entries are too
//! long for the spec's `u16` lengths, read through `tile/entries32`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use panel_tests::tls::{TlsCluster, issue, start_issued};
use panel_tests::{ChildGuard, free_port, panel};
use panel_transport::pki;
use serde_json::Value;
use sha2::{Digest, Sha256};

// ---------------------------------------------------------------------------------------
// The independent reader. Nothing below calls project code.
// ---------------------------------------------------------------------------------------

struct Reply {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }
}

/// One HTTP/1.1 GET (or any raw request line), `Connection: close`, read to the end.
fn raw_request(addr: &str, request: &[u8]) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    s.write_all(request).expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    assert!(
        !headers
            .get("transfer-encoding")
            .is_some_and(|t| t.contains("chunked")),
        "this reader does not decode chunked bodies"
    );
    let head_only = request.starts_with(b"HEAD ");
    if let Some(len) = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .filter(|_| !head_only)
    {
        assert!(body.len() >= len, "short body");
        body.truncate(len);
    }
    Reply {
        status,
        headers,
        body,
    }
}

fn get(addr: &str, path: &str) -> Reply {
    raw_request(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// RFC 6962 section 2.1.
fn leaf(entry: &[u8]) -> [u8; 32] {
    sha256(&[&[0], entry])
}

fn mth(leaves: &[[u8; 32]]) -> [u8; 32] {
    match leaves.len() {
        0 => sha256(&[]),
        1 => leaves[0],
        n => {
            let mut k = 1;
            while k * 2 < n {
                k *= 2;
            }
            sha256(&[&[1], &mth(&leaves[..k]), &mth(&leaves[k..])])
        }
    }
}

/// tlog-tiles: 3-digit groups, all but the last prefixed with `x`.
fn tile_index(n: u64) -> String {
    let mut groups = vec![format!("{:03}", n % 1000)];
    let mut rest = n / 1000;
    while rest > 0 {
        groups.push(format!("x{:03}", rest % 1000));
        rest /= 1000;
    }
    groups.reverse();
    groups.join("/")
}

fn tile_suffix(n: u64, width: u64) -> String {
    if width == 256 {
        tile_index(n)
    } else {
        format!("{}.p/{width}", tile_index(n))
    }
}

/// signed-note verifier key: `<name>+<hex key ID>+<base64(type || key)>`.
#[derive(Debug, Clone)]
struct Vkey {
    name: String,
    id: [u8; 4],
    kind: u8,
    key: VerifyingKey,
}

fn parse_vkey(s: &str) -> Vkey {
    let mut parts = s.splitn(3, '+');
    let (name, id, key) = (
        parts.next().expect("name"),
        parts.next().expect("id"),
        parts.next().expect("key"),
    );
    let id = hex::decode(id).expect("hex id");
    let raw = B64.decode(key).expect("base64 key");
    assert_eq!(raw.len(), 33, "{s}");
    let vk = Vkey {
        name: name.to_string(),
        id: id.try_into().expect("4-byte id"),
        kind: raw[0],
        key: VerifyingKey::from_bytes(raw[1..].try_into().expect("32")).expect("ed25519 key"),
    };
    // signed-note: the key ID is the first 4 bytes of SHA-256(name || 0x0A || type || key).
    let want = sha256(&[name.as_bytes(), b"\n", &raw]);
    assert_eq!(vk.id, want[..4], "key ID of {s}");
    vk
}

/// One signature line: key name, key ID, signature bytes.
type SigLine = (String, [u8; 4], Vec<u8>);

/// A signed note: the text up to and including the line before the last blank line, and
/// `— <name> <base64(key ID || signature)>` lines after it.
fn parse_note(bytes: &[u8]) -> (String, Vec<SigLine>) {
    let all = std::str::from_utf8(bytes).expect("a note is UTF-8");
    let split = all
        .rfind("\n\n")
        .expect("a blank line before the signatures");
    let text = all[..split + 1].to_string();
    let sigs = all[split + 2..]
        .lines()
        .map(|l| {
            let rest = l.strip_prefix("\u{2014} ").expect("em dash and space");
            let (name, b64) = rest.split_once(' ').expect("name and signature");
            let raw = B64.decode(b64).expect("base64 signature");
            (
                name.to_string(),
                raw[..4].try_into().expect("id"),
                raw[4..].to_vec(),
            )
        })
        .collect();
    (text, sigs)
}

/// The parts of a tlog-policy file (with the `log-signer`/`log-quorum` lines docs/WIRE.md
/// documents for quorum logs) this auditor needs.
#[derive(Default)]
struct Policy {
    log_keys: Vec<(Option<String>, Vkey)>,
    log_quorum: Option<usize>,
    witnesses: BTreeMap<String, Vkey>,
    groups: BTreeMap<String, (String, Vec<String>)>,
    quorum: Option<String>,
}

fn parse_policy(text: &str) -> Policy {
    let mut p = Policy::default();
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            [c, ..] if c.starts_with('#') => {}
            ["log", vkey, ..] => p.log_keys.push((None, parse_vkey(vkey))),
            ["log-signer", org, vkey] => p.log_keys.push((Some(org.to_string()), parse_vkey(vkey))),
            ["log-quorum", k] => p.log_quorum = Some(k.parse().expect("k")),
            ["witness", name, vkey, ..] => {
                p.witnesses.insert(name.to_string(), parse_vkey(vkey));
            }
            ["group", name, rule, members @ ..] => {
                p.groups.insert(
                    name.to_string(),
                    (
                        rule.to_string(),
                        members.iter().map(|m| m.to_string()).collect(),
                    ),
                );
            }
            ["quorum", name] => p.quorum = (*name != "none").then(|| name.to_string()),
            other => panic!("unexpected policy line {other:?}"),
        }
    }
    p
}

fn satisfied(p: &Policy, name: &str, cosigned: &BTreeSet<String>) -> bool {
    if p.witnesses.contains_key(name) {
        return cosigned.contains(name);
    }
    let (rule, members) = p.groups.get(name).expect("a policy group");
    let met = members.iter().filter(|m| satisfied(p, m, cosigned)).count();
    match rule.as_str() {
        "all" => met == members.len(),
        "any" => met >= 1,
        k => met >= k.parse::<usize>().expect("threshold"),
    }
}

/// Checks the checkpoint note against the policy and returns (origin, size, root).
fn check_checkpoint(note: &[u8], p: &Policy) -> (String, u64, [u8; 32]) {
    let (text, sigs) = parse_note(note);
    let mut log_orgs = BTreeSet::new();
    let mut log_signed = false;
    let mut cosigned = BTreeSet::new();
    for (name, id, sig) in &sigs {
        for (org, k) in p
            .log_keys
            .iter()
            .filter(|(_, k)| &k.name == name && &k.id == id)
        {
            assert_eq!(k.kind, 0x01, "log keys are Ed25519 note keys");
            let sig = Signature::from_slice(sig).expect("64-byte signature");
            k.key
                .verify(text.as_bytes(), &sig)
                .unwrap_or_else(|e| panic!("log signature by {name}: {e}"));
            log_signed = true;
            if let Some(org) = org {
                log_orgs.insert(org.clone());
            }
        }
        for (wname, k) in p
            .witnesses
            .iter()
            .filter(|(_, k)| &k.name == name && &k.id == id)
        {
            // tlog-cosignature: 8-byte big-endian timestamp, then Ed25519 over
            // "cosignature/v1\ntime <timestamp>\n" and the checkpoint text.
            assert_eq!(k.kind, 0x04, "witness keys are cosignature/v1 keys");
            assert_eq!(sig.len(), 72, "a cosignature is 72 bytes");
            let time = u64::from_be_bytes(sig[..8].try_into().expect("8"));
            let msg = format!("cosignature/v1\ntime {time}\n{text}");
            let s = Signature::from_slice(&sig[8..]).expect("64-byte signature");
            k.key
                .verify(msg.as_bytes(), &s)
                .unwrap_or_else(|e| panic!("cosignature by {wname}: {e}"));
            cosigned.insert(wname.clone());
        }
    }
    match p.log_quorum {
        Some(k) => assert!(
            log_orgs.len() >= k,
            "the log quorum is {k} organisations; signed by {log_orgs:?}"
        ),
        None => assert!(log_signed, "no signature by the log's key"),
    }
    if let Some(q) = &p.quorum {
        assert!(
            satisfied(p, q, &cosigned),
            "the witness quorum {q} is not met; cosigned by {cosigned:?}"
        );
    }
    // tlog-checkpoint: origin, decimal size, base64 root, each line ending in a newline.
    let lines: Vec<&str> = text.split('\n').collect();
    assert!(lines.len() >= 4, "{text:?}");
    let size: u64 = lines[1].parse().expect("size");
    let root: [u8; 32] = B64
        .decode(lines[2])
        .expect("base64 root")
        .try_into()
        .expect("32-byte root");
    if let Some((_, k)) = p.log_keys.first() {
        assert_eq!(lines[0], k.name, "the origin is the log key's name");
    }
    (lines[0].to_string(), size, root)
}

/// Splits an entry bundle with `prefix`-byte big-endian lengths.
fn split_bundle(bytes: &[u8], prefix: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = bytes[at..at + prefix]
            .iter()
            .fold(0usize, |n, &b| n << 8 | b as usize);
        at += prefix;
        out.push(bytes[at..at + len].to_vec());
        at += len;
    }
    assert_eq!(at, bytes.len(), "the bundle ends inside an entry");
    out
}

struct Mirrored {
    size: u64,
    root: [u8; 32],
    entries: Vec<Vec<u8>>,
    wide_bundles: usize,
}

/// Mirrors the log at `addr` and checks it: the checkpoint against the policy, every
/// bundle against its level-0 tile, every higher tile against hashes computed from the
/// entries, and the root.
/// `strict_headers`: also check the content types and caching tlog-tiles asks of a log
/// server (a stock static file server knows neither).
fn mirror_and_check(addr: &str, policy: &Policy, strict_headers: bool) -> Mirrored {
    let cp = get(addr, "/checkpoint");
    assert_eq!(cp.status, 200, "{}", String::from_utf8_lossy(&cp.body));

    if strict_headers {
        assert!(
            cp.header("content-type").starts_with("text/plain"),
            "{:?}",
            cp.headers
        );
        let max_age: u64 = cp
            .header("cache-control")
            .split(',')
            .find_map(|d| d.trim().strip_prefix("max-age="))
            .and_then(|a| a.parse().ok())
            .expect("the checkpoint states a max-age");
        assert!(max_age <= 10, "the checkpoint is cached for {max_age} s");
    }
    let (_, size, root) = check_checkpoint(&cp.body, policy);

    let mut entries = Vec::new();
    let mut leaves = Vec::new();
    let mut wide_bundles = 0;
    for t in 0..size.div_ceil(256) {
        let width = (size - t * 256).min(256);
        let suffix = tile_suffix(t, width);
        let mut bundle = get(addr, &format!("/tile/entries/{suffix}"));
        let mut prefix = 2;
        if bundle.status == 404 {
            // An entry longer than a u16 length can say: the log serves the same entries
            // with u32 lengths at another URL (docs/WIRE.md "tlog-tiles").
            bundle = get(addr, &format!("/tile/entries32/{suffix}"));
            prefix = 4;
            wide_bundles += 1;
        }
        assert_eq!(bundle.status, 200, "bundle {suffix}");
        let got = split_bundle(&bundle.body, prefix);
        assert_eq!(got.len() as u64, width, "bundle {suffix}");
        let hashes: Vec<[u8; 32]> = got.iter().map(|e| leaf(e)).collect();
        let tile = get(addr, &format!("/tile/0/{suffix}"));
        assert_eq!(tile.status, 200, "tile 0/{suffix}");
        if strict_headers {
            assert_eq!(tile.header("content-type"), "application/octet-stream");
            assert!(
                tile.header("cache-control").contains("immutable"),
                "{:?}",
                tile.headers
            );
        }
        assert_eq!(
            tile.body,
            hashes.concat(),
            "tile 0/{suffix} is not the entries' leaf hashes"
        );
        leaves.extend(hashes);
        entries.extend(got);
    }
    // Higher levels: hash j of level l is the root of leaves j*256^l .. (j+1)*256^l.
    let mut level = 1u32;
    while size >> (8 * level) > 0 {
        let count = size >> (8 * level);
        let span = 1usize << (8 * level);
        for t in 0..count.div_ceil(256) {
            let width = (count - t * 256).min(256);
            let suffix = tile_suffix(t, width);
            let tile = get(addr, &format!("/tile/{level}/{suffix}"));
            assert_eq!(tile.status, 200, "tile {level}/{suffix}");
            let want: Vec<u8> = (0..width as usize)
                .flat_map(|j| {
                    let lo = (t as usize * 256 + j) * span;
                    mth(&leaves[lo..lo + span])
                })
                .collect();
            assert_eq!(tile.body, want, "tile {level}/{suffix}");
        }
        level += 1;
    }
    assert_eq!(
        mth(&leaves),
        root,
        "the entries' root is not the checkpoint's"
    );
    // Nothing past the tree: the next bundle and tile, and a wider partial.
    let next = size / 256 + 1;
    for path in [
        format!("/tile/0/{}", tile_index(next)),
        format!("/tile/entries/{}", tile_index(next)),
        format!("/tile/{level}/000"),
    ] {
        assert_eq!(get(addr, &path).status, 404, "{path}");
    }
    Mirrored {
        size,
        root,
        entries,
        wide_bundles,
    }
}

// ---------------------------------------------------------------------------------------
// The cluster (project code from here on: starting processes and writing the record).
// ---------------------------------------------------------------------------------------

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn poll<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn witness(root: &Path, issued: &pki::Issued, org: &str) -> (ChildGuard, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let mut cmd = panel();
    cmd.args(["witness", "run", "--listen", &listen, "--data"])
        .arg(root.join(format!("witness-{org}")))
        .arg("--key")
        .arg(issued.witness_key_path(org))
        .args(["--name", &pki::witness_name(org), "--charter"])
        .arg(issued.charter_path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    (
        ChildGuard::spawn(format!("witness {org}"), cmd),
        format!("http://{listen}"),
    )
}

fn start(root: &Path) -> (TlsCluster, Vec<ChildGuard>) {
    let issued = issue(root, &[]);
    let mut witnesses = Vec::new();
    let mut extra: Vec<String> = vec![
        "--checkpoint-every-ms".into(),
        "200".into(),
        "--test-commands".into(),
    ];
    for org in pki::LOCAL_ORGANISATIONS {
        let (w, url) = witness(root, &issued, org);
        witnesses.push(w);
        extra.extend(["--witness".into(), url]);
    }
    (start_issued(root, issued, &extra), witnesses)
}

fn tiles_server(c: &TlsCluster, root: &Path, replica: usize) -> (ChildGuard, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let log = |ext: &str| {
        std::fs::File::create(root.join(format!("tiles-{replica}.{ext}"))).expect("log file")
    };
    let mut cmd = panel();
    cmd.args(["tiles", "serve", "--listen", &listen, "--refresh-ms", "300"])
        .arg("--policy")
        .arg(c.pki.policy_path())
        .args(["--addr", &c.addrs[replica]])
        .arg("--tls")
        .arg(c.pki.dir(pki::LOCAL_CLIENT))
        .stdout(log("out"))
        .stderr(log("err"));
    (
        ChildGuard::spawn(format!("tiles of replica {}", replica + 1), cmd),
        listen,
    )
}

/// Registers arbiter `id` of northwind, endorsed by its roster key.
fn register(c: &TlsCluster, root: &Path, id: &str) {
    let key = root.join(format!("{id}.key"));
    let out = panel()
        .args(["node", "keygen", "--out"])
        .arg(&key)
        .output()
        .expect("keygen");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = panel()
        .args(["arbiter", "register", "--id", id, "--key-file"])
        .arg(&key)
        .args(["--organisation", "northwind", "--model-family", "fam"])
        .args(["--stance", "A", "--endpoint", "link", "--org-key"])
        .arg(c.pki.signing_key_path("northwind"))
        .args(["--addr", &c.addrs.join(","), "--tls"])
        .arg(c.pki.dir(pki::LOCAL_CLIENT))
        .output()
        .expect("register");
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Writes that each add one entry to the record: admission decisions for `arbiter`, one
/// per request id in `ids`.
fn write_entries(c: &TlsCluster, arbiter: &str, ids: std::ops::RangeInclusive<u64>) {
    let transport = panel_tests::tls::tls(&c.pki.dir(pki::LOCAL_CLIENT));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut clients: Vec<_> = c
            .addrs
            .iter()
            .map(|a| panel_coordinator::client::coordinator(&transport, a).expect("client"))
            .collect();
        for i in ids {
            let r = panel_coordinator::client::write_with_retry(
                &mut clients,
                "tiles-auditor-test",
                i,
                &serde_json::json!({ "SetAdmission": {
                    "arbiter_id": arbiter, "admitted": i % 2 == 0, "score_milli": i
                } }),
                Duration::from_secs(30),
            )
            .await
            .unwrap_or_else(|e| panic!("write {i}: {e}"));
            assert!(r.applied, "write {i}: {}", r.result_json);
        }
    });
}

/// Waits until tile server `i` at `addr` publishes a checkpoint of at least `size`; on a
/// timeout, fails with its output and the cluster's checkpoints.
fn wait_for_size(c: &TlsCluster, root: &Path, i: usize, addr: &str, size: u64) {
    let start = Instant::now();
    while checkpoint_size(addr).is_none_or(|s| s < size) {
        if start.elapsed() >= Duration::from_secs(60) {
            let logs = ["out", "err"].map(|ext| {
                std::fs::read_to_string(root.join(format!("tiles-{i}.{ext}"))).unwrap_or_default()
            });
            let q = panel()
                .args(["coordinator", "read", "--addr", &c.addrs[0], "--query"])
                .arg(r#"{"Checkpoints":{"limit":3}}"#)
                .arg("--tls")
                .arg(c.pki.dir(pki::LOCAL_CLIENT))
                .output()
                .expect("read");
            panic!(
                "no witnessed checkpoint of size {size} from {addr}; its output:\n{}\n{}\nthe cluster's checkpoints: {}",
                logs[0],
                logs[1],
                text(&q.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn checkpoint_size(addr: &str) -> Option<u64> {
    TcpStream::connect(addr).ok()?;
    let r = get(addr, "/checkpoint");
    if r.status != 200 {
        return None;
    }
    let (text, _) = parse_note(&r.body);
    text.split('\n').nth(1)?.parse().ok()
}

fn check_record(m: &Mirrored, admissions: u64) {
    let entries: Vec<Value> = m
        .entries
        .iter()
        .map(|e| serde_json::from_slice(e).expect("each entry is the record's JSON"))
        .collect();
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(e["seq"], i as u64, "entry {i} is leaf {i}");
    }
    assert!(
        entries[0]["command"].to_string().contains("Charter"),
        "the first entry adopts the charter: {}",
        entries[0]["command"]
    );
    let written = entries
        .iter()
        .filter(|e| e["command"]["SetAdmission"]["arbiter_id"] == "arb-audit")
        .count() as u64;
    assert_eq!(written, admissions);
}

#[test]
fn an_outside_auditor_mirrors_and_checks_the_record_from_each_replica_and_a_static_copy() {
    let root = tempfile::tempdir().expect("tempdir");
    let (c, _witnesses) = start(root.path());
    let policy_text = std::fs::read_to_string(c.pki.policy_path()).expect("policy");
    let policy = parse_policy(&policy_text);
    assert_eq!(policy.log_quorum, Some(2));
    assert_eq!(policy.witnesses.len(), 2);

    // More than one full tile of entries: the charter, one arbiter's registration, and
    // 300 admission decisions for it (a test command, applied, so on the record),
    // written in-process.
    let admissions = 300u64;
    // The charter, the registration and the admissions.
    let total = admissions + 2;
    register(&c, root.path(), "arb-audit");
    write_entries(&c, "arb-audit", 1..=admissions);

    // Each of two replicas serves its own copy; both reach a witnessed head covering
    // every entry.
    let servers: Vec<(ChildGuard, String)> = [0, 1]
        .iter()
        .map(|&r| tiles_server(&c, root.path(), r))
        .collect();
    for (i, (_, addr)) in servers.iter().enumerate() {
        wait_for_size(&c, root.path(), i, addr, total);
        let m = mirror_and_check(addr, &policy, true);
        assert_eq!(m.wide_bundles, 0, "no entry here needs the wide bundle");
        check_record(&m, admissions);
        assert!(m.size > 256, "a full tile and a partial one");
    }
    // The record grows; each server follows, fetching only the new entries.
    write_entries(&c, "arb-audit", admissions + 1..=admissions + 40);
    let (admissions, total) = (admissions + 40, total + 40);
    for (i, (_, addr)) in servers.iter().enumerate() {
        wait_for_size(&c, root.path(), i, addr, total);
        let m = mirror_and_check(addr, &policy, true);
        check_record(&m, admissions);
        let out = std::fs::read_to_string(root.path().join(format!("tiles-{i}.out")))
            .expect("server output");
        assert!(out.contains("read one by one"), "{out}");
    }

    // Malformed and out-of-tree requests: a status, never a crash.
    let addr = &servers[0].1;
    for bad in [
        "/",
        "/tile",
        "/tile/0/1",
        "/tile/0/0000",
        "/tile/00/000",
        "/tile/64/000",
        "/tile/0/x000/001",
        "/tile/0/000.p/0",
        "/tile/0/000.p/256",
        "/tile/0/000.p/007",
        "/tile/entries/-01",
        "/tile/0/x018/x446/x744/x073/x709/x551/616",
        "/tile/0/%30%30%30",
        "/tile/../checkpoint",
        "/checkpoint/",
        "/add-checkpoint",
    ] {
        let r = get(addr, bad);
        assert_eq!(r.status, 400, "{bad}: {}", text(&r.body));
        assert_eq!(r.header("cache-control"), "no-store", "{bad}");
    }
    let long = format!("/tile/0/{}000", "x999/".repeat(400));
    assert!(
        matches!(get(addr, &long).status, 400 | 414 | 431),
        "a long path"
    );
    for beyond in [
        "/tile/0/x001/000",
        "/tile/entries/x999/999.p/3",
        "/tile/9/000",
    ] {
        assert_eq!(get(addr, beyond).status, 404, "{beyond}");
    }
    let post = raw_request(
        addr,
        format!("POST /checkpoint HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!(post.status, 405);
    assert!(post.header("allow").contains("GET"));
    let garbage = raw_request(addr, b"\x00\xffNOT HTTP\r\n\r\n");
    assert_eq!(garbage.status, 400);
    let head = raw_request(
        addr,
        format!("HEAD /tile/0/000 HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    // Still serving after all that.
    let again = mirror_and_check(addr, &policy, true);
    assert!(again.size >= total);

    // The offline form: `panel export --tiles DIR`, served by Python's stock static file
    // server, checked by the same reader.
    let dir = root.path().join("static-tiles");
    let record = root.path().join("record.json");
    let out = poll(
        "an export with a witnessed checkpoint",
        Duration::from_secs(30),
        || {
            let out = panel()
                .args(["export", "--out"])
                .arg(&record)
                .arg("--tiles")
                .arg(&dir)
                .args(["--addr", &c.addrs.join(","), "--tls"])
                .arg(c.pki.dir(pki::LOCAL_CLIENT))
                .output()
                .expect("export");
            let ok = out.status.success() && checkpoint_file_size(&dir).is_some_and(|s| s >= total);
            ok.then_some(out)
        },
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("tlog-tiles"), "{stdout}");
    let port = free_port();
    let mut py = std::process::Command::new("python3");
    py.args([
        "-m",
        "http.server",
        "--bind",
        "127.0.0.1",
        &port.to_string(),
        "--directory",
    ])
    .arg(&dir)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let _py = ChildGuard::spawn("python3 http.server", py);
    let static_addr = format!("127.0.0.1:{port}");
    poll("the static server", Duration::from_secs(20), || {
        TcpStream::connect(&static_addr).ok()
    });
    let m = mirror_and_check(&static_addr, &policy, false);
    check_record(&m, admissions);
    assert_eq!(m.root.len(), 32);

    // And `panel tiles write` from the record file gives the same checkpoint.
    let dir2 = root.path().join("static-tiles-2");
    let out = panel()
        .args(["tiles", "write"])
        .arg(&record)
        .arg("--out")
        .arg(&dir2)
        .arg("--policy")
        .arg(c.pki.policy_path())
        .output()
        .expect("tiles write");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (_, size2, root2) = check_checkpoint(
        &std::fs::read(dir2.join("checkpoint")).expect("checkpoint"),
        &policy,
    );
    assert!(size2 >= m.size);
    if size2 == m.size {
        assert_eq!(root2, m.root);
    }
}

fn checkpoint_file_size(dir: &Path) -> Option<u64> {
    let bytes = std::fs::read(dir.join("checkpoint")).ok()?;
    let (text, _) = parse_note(&bytes);
    text.split('\n').nth(1)?.parse().ok()
}

/// A signed note over `text` by `key` under `name`, as signed-note v1 writes it, and the
/// verifier key string.
fn sign_note(name: &str, key: &ed25519_dalek::SigningKey, text: &str) -> (String, String) {
    use ed25519_dalek::Signer;
    let mut typed = vec![0x01];
    typed.extend_from_slice(key.verifying_key().as_bytes());
    let id = &sha256(&[name.as_bytes(), b"\n", &typed])[..4];
    let mut line = id.to_vec();
    line.extend_from_slice(&key.sign(text.as_bytes()).to_bytes());
    (
        format!("{text}\n\u{2014} {name} {}\n", B64.encode(line)),
        format!("{name}+{}+{}", hex::encode(id), B64.encode(typed)),
    )
}

/// Entries longer than a `u16` length can say (a real record's exam sittings are about
/// 180 kB): `panel tiles serve --record` serves their bundles at `tile/entries32` only,
/// `panel tiles write` names the bundles it leaves out, and the reader still recomputes
/// the root. The record is built here, its checkpoint signed with a key of the test's.
#[test]
fn entries_too_long_for_a_u16_length_are_read_from_the_wide_bundles() {
    let root = tempfile::tempdir().expect("tempdir");
    let n = 300u64;
    let long = [7u64, 290];
    let entries: Vec<String> = (0..n)
        .map(|i| {
            let text = if long.contains(&i) {
                "y".repeat(70_000)
            } else {
                format!("note {i}")
            };
            format!(
                r#"{{"seq":{i},"log_index":{i},"item_index":0,"time_ms":1,"seed":2,"client_id":"c","request_id":{i},"command":{{"Note":{{"topic":"t","text":"{text}"}}}},"reply":{{"Applied":null}}}}"#
            )
        })
        .collect();
    let leaves: Vec<[u8; 32]> = entries.iter().map(|e| leaf(e.as_bytes())).collect();
    let origin = "tiles.example/wide";
    let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let body = format!("{origin}\n{n}\n{}\n", B64.encode(mth(&leaves)));
    let (note, vkey) = sign_note(origin, &key, &body);
    let record = format!(
        r#"{{"format":"crucible-panel-record/v3","entries":[{}],"debates":{{}},"arbiters":[],"checkpoints":[{}]}}"#,
        entries.join(","),
        serde_json::to_string(&note).expect("json string")
    );
    let record_path = root.path().join("record.json");
    std::fs::write(&record_path, record).expect("write record");
    let policy_path = root.path().join("policy.txt");
    std::fs::write(&policy_path, format!("log {vkey}\nquorum none\n")).expect("write policy");
    let policy = parse_policy(&format!("log {vkey}\nquorum none\n"));

    let out = panel()
        .args(["tiles", "write"])
        .arg(&record_path)
        .arg("--out")
        .arg(root.path().join("static"))
        .arg("--policy")
        .arg(&policy_path)
        .output()
        .expect("tiles write");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("left out tile/entries/000:"), "{stdout}");
    assert!(
        stdout.contains("left out tile/entries/001.p/44:"),
        "{stdout}"
    );
    assert!(root.path().join("static/tile/entries32/000").exists());

    let listen = format!("127.0.0.1:{}", free_port());
    let mut cmd = panel();
    cmd.args(["tiles", "serve", "--listen", &listen, "--record"])
        .arg(&record_path)
        .arg("--policy")
        .arg(&policy_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _server = ChildGuard::spawn("tiles of a record file", cmd);
    poll("the tile server", Duration::from_secs(20), || {
        checkpoint_size(&listen)
    });
    let m = mirror_and_check(&listen, &policy, true);
    assert_eq!(m.size, n);
    assert_eq!(m.wide_bundles, 2);
    let got: Vec<String> = m
        .entries
        .iter()
        .map(|e| String::from_utf8(e.clone()).expect("utf8"))
        .collect();
    assert_eq!(
        got, entries,
        "the served entries are the record's leaf bytes"
    );
    let r = get(&listen, "/tile/entries/000");
    assert_eq!(r.status, 404);
    assert!(text(&r.body).contains("entries32"), "{}", text(&r.body));
}
