//! The metrics endpoint of real replicas (`panel coordinator run --metrics-addr`,
//! docs/coordinator/operations.md "Metrics and readiness"): a three-replica cluster as processes,
//! scraped over real sockets. The exposition is parsed strictly (every line a comment of
//! a known kind or a sample of a declared family, `# EOF` last), counters move when work
//! happens (a write, a refused write, rate-limited writes, an admission), `/readyz` is 200
//! on ready replicas and 503 on one left alone, `/livez` stays 200.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

mod node_support;

use node_support::{SCRIPTED_PERFECT, merge_motion, sign, start_node, state};
use panel_tests::{ChildGuard, free_port, init_cluster, loopback_addrs, panel, spawn_replicas};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);

/// One HTTP/1.1 GET: the status code and the body.
fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body.to_owned()))
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
}

/// Parses `{a="x",b="y"}` strictly (escapes `\\`, `\"`, `\n`); returns the labels and the
/// rest of the line.
fn labels(s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut out = BTreeMap::new();
    let Some(mut rest) = s.strip_prefix('{') else {
        return Ok((out, s));
    };
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((out, r));
        }
        let eq = rest.find('=').ok_or("label without '='")?;
        let name = &rest[..eq];
        if !is_name(name) {
            return Err(format!("bad label name {name:?}"));
        }
        let mut chars = rest[eq + 1..].char_indices();
        if chars.next().map(|(_, c)| c) != Some('"') {
            return Err("label value not quoted".into());
        }
        let mut value = String::new();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next().map(|(_, c)| c) {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    other => return Err(format!("bad escape {other:?}")),
                },
                '"' => {
                    end = Some(eq + 1 + i + 1);
                    break;
                }
                c => value.push(c),
            }
        }
        let end = end.ok_or("unterminated label value")?;
        if out.insert(name.to_owned(), value).is_some() {
            return Err(format!("label {name} twice"));
        }
        rest = &rest[end..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if !rest.starts_with('}') {
            return Err("labels not separated by ','".into());
        }
    }
}

fn value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        v => v.parse().map_err(|e| format!("bad value {v:?}: {e}")),
    }
}

/// Suffixes a sample may add to its family's name, by type (OpenMetrics 1.0).
fn suffixes(kind: &str) -> &'static [&'static str] {
    match kind {
        "counter" => &["_total", "_created"],
        "histogram" => &["_bucket", "_count", "_sum", "_created"],
        "gauge" | "unknown" | "info" | "stateset" => &[""],
        _ => &[],
    }
}

/// A strict check of the text exposition: returns every sample as `name{labels}` with
/// its value (labels sorted), or the first line that does not conform.
fn parse(text: &str) -> Result<BTreeMap<String, f64>, String> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    if lines.last() != Some(&"# EOF") {
        return Err("the exposition does not end with # EOF".into());
    }
    for (n, line) in lines[..lines.len() - 1].iter().enumerate() {
        let at = |e: String| format!("line {}: {e}: {line:?}", n + 1);
        if let Some(c) = line.strip_prefix("# ") {
            let mut parts = c.splitn(3, ' ');
            let (kw, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            if !is_name(name) {
                return Err(at("bad metric name".into()));
            }
            match kw {
                "TYPE" => {
                    let t = parts.next().unwrap_or("");
                    if suffixes(t).is_empty() {
                        return Err(at(format!("unknown type {t:?}")));
                    }
                    if types.insert(name.to_owned(), t.to_owned()).is_some() {
                        return Err(at("family declared twice".into()));
                    }
                }
                "HELP" | "UNIT" => {}
                other => return Err(at(format!("unknown comment {other:?}"))),
            }
            continue;
        }
        let name_end = line
            .find(['{', ' '])
            .ok_or_else(|| at("sample without a value".into()))?;
        let name = &line[..name_end];
        if !is_name(name) {
            return Err(at("bad sample name".into()));
        }
        let family = types
            .iter()
            .find(|(f, t)| {
                suffixes(t)
                    .iter()
                    .any(|s| name.strip_suffix(s) == Some(f.as_str()))
            })
            .ok_or_else(|| at("sample of an undeclared family".into()))?;
        let (ls, rest) = labels(&line[name_end..]).map_err(at)?;
        let mut fields = rest
            .strip_prefix(' ')
            .ok_or_else(|| at("no space before the value".into()))?
            .split(' ');
        let v = value(fields.next().unwrap_or("")).map_err(at)?;
        if let Some(ts) = fields.next() {
            value(ts).map_err(at)?;
        }
        if fields.next().is_some() {
            return Err(at("trailing fields".into()));
        }
        if family.1 == "counter" && name.ends_with("_total") && (v.is_nan() || v < 0.0) {
            return Err(at("negative counter".into()));
        }
        let shown: Vec<String> = ls.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        let key = if shown.is_empty() {
            name.to_owned()
        } else {
            format!("{name}{{{}}}", shown.join(","))
        };
        if samples.insert(key, v).is_some() {
            return Err(at("sample twice".into()));
        }
    }
    Ok(samples)
}

fn scrape(addr: &str) -> BTreeMap<String, f64> {
    let (code, body) = get(addr, "/metrics").expect("scrape");
    assert_eq!(code, 200, "{body}");
    parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"))
}

fn at(m: &BTreeMap<String, f64>, key: &str) -> f64 {
    m.get(key).copied().unwrap_or(0.0)
}

fn poll<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    panel_tests::poll_until(what, DEADLINE, f)
}

fn run(args: &[&str]) -> Output {
    panel().args(args).output().expect("run panel")
}

fn status(addr: &str) -> Option<Value> {
    let out = run(&["coordinator", "status", "--addr", addr]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

fn write(addr: &str, request_id: u64, command: &Value) -> Output {
    run(&[
        "coordinator",
        "write",
        "--addr",
        addr,
        "--client-id",
        "metrics-test",
        "--request-id",
        &request_id.to_string(),
        "--command",
        &command.to_string(),
        "--patience-secs",
        "10",
    ])
}

fn registration(id: &str) -> Value {
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]).verifying_key();
    json!({ "RegisterArbiter": {
        "arbiter_id": id,
        "public_key": hex::encode(key.to_bytes()),
        "organisation": "northwind",
        "model_family": "m1",
        "stance": "A",
    }})
}

#[test]
fn metrics_endpoint_counts_work_and_readiness_follows_the_leader() {
    let tmp = tempfile::tempdir().unwrap();
    let root: &Path = tmp.path();
    let addrs = loopback_addrs(3);
    let metrics: Vec<String> = (0..3)
        .map(|_| format!("127.0.0.1:{}", free_port()))
        .collect();
    let mut replicas: Vec<Option<ChildGuard>> = spawn_replicas(root, &addrs, |id, cmd| {
        cmd.args(["--metrics-addr", &metrics[id - 1]]).args([
            "--anonymous-burst",
            "10",
            "--anonymous-per-minute",
            "10",
        ]);
    })
    .into_iter()
    .map(Some)
    .collect();

    // Live before the group exists; not ready: no group, no leader.
    let (code, body) = poll("/readyz answers", || get(&metrics[0], "/readyz"));
    assert_eq!(code, 503, "{body}");
    assert_eq!(get(&metrics[0], "/livez").unwrap().0, 200);

    init_cluster(&addrs);
    let leader = poll("a leader", || {
        status(&addrs[0]).and_then(|s| s["leader_id"].as_u64())
    }) as usize;
    let l = leader - 1;
    for m in &metrics {
        poll("every replica ready", || {
            get(m, "/readyz").filter(|(c, _)| *c == 200)
        });
    }
    let before = scrape(&metrics[l]);
    assert_eq!(
        at(&before, "panel_raft_role{role=\"Leader\"}"),
        1.0,
        "{before:?}"
    );
    assert!(at(&before, "panel_raft_term") >= 1.0);
    assert_eq!(at(&before, "panel_raft_leader_id"), leader as f64);
    assert_eq!(at(&before, "panel_raft_voters"), 3.0);
    assert!(at(&before, "panel_raft_commit_index") >= at(&before, "panel_raft_applied_index"));
    assert!(before.contains_key("panel_raft_snapshot_age_seconds"));
    let follower = (l + 1) % 3;
    assert_eq!(
        at(
            &scrape(&metrics[follower]),
            "panel_raft_role{role=\"Follower\"}"
        ),
        1.0
    );

    // A write moves the applied counter on every replica; the record and the arbiter
    // gauges follow the state.
    let out = write(
        &addrs[l],
        1,
        &json!({"Note": {"topic": "t", "text": "one"}}),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = write(&addrs[l], 2, &registration("arb-1"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for m in &metrics {
        poll("the applied counters on every replica", || {
            let s = scrape(m);
            (at(&s, "panel_applied_items_total{kind=\"Note\"}") == 1.0
                && at(&s, "panel_applied_items_total{kind=\"RegisterArbiter\"}") == 1.0)
                .then_some(())
        });
    }
    let after = scrape(&metrics[l]);
    assert_eq!(at(&after, "panel_arbiters{status=\"pending\"}"), 1.0);
    assert_eq!(at(&after, "panel_record_entries"), 1.0);
    assert!(at(&after, "panel_raft_applied_index") > at(&before, "panel_raft_applied_index"));
    let admit =
        json!({"SetAdmission": {"arbiter_id": "arb-1", "admitted": true, "score_milli": 900}});
    assert!(write(&addrs[l], 3, &admit).status.success());
    let s = poll("the admission counted", || {
        let s = scrape(&metrics[l]);
        (at(&s, "panel_exam_decisions_total{decision=\"admitted\"}") == 1.0).then_some(s)
    });
    assert_eq!(at(&s, "panel_arbiters{status=\"admitted\"}"), 1.0);
    // A second registration of the same id is refused in apply, on every replica.
    assert!(write(&addrs[l], 4, &registration("arb-1")).status.success());
    poll("the apply refusal counted", || {
        let s = scrape(&metrics[follower]);
        (at(&s, "panel_apply_refusals_total{code=\"arbiter_exists\"}") == 1.0).then_some(())
    });

    // A refused write: an internal command from a client, refused by the replica it
    // reached, before any proposal.
    let refused = write(
        &addrs[follower],
        5,
        &json!({"CloseMotion": {"motion_id": "m"}}),
    );
    assert!(!refused.status.success());
    let s = scrape(&metrics[follower]);
    assert_eq!(
        at(
            &s,
            "panel_intake_refusals_total{reason=\"internal_command\"}"
        ),
        1.0,
        "{s:?}"
    );

    // Rate limits: client commands (not the test notes) take tokens from the anonymous
    // bucket (10 per minute) and the registration buckets at the leader's intake.
    let mut limited = 0;
    for i in 0..20 {
        let out = write(&addrs[l], 100 + i, &registration(&format!("flood-{i}")));
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("rate limited") || err.contains("too many"),
                "{err}"
            );
            limited += 1;
        }
    }
    assert!(limited > 0, "no write of the flood was rate-limited");
    let s = scrape(&metrics[l]);
    assert_eq!(
        at(&s, "panel_intake_refusals_total{reason=\"rate_limited\"}"),
        limited as f64,
        "{s:?}"
    );
    let by_limit: f64 = s
        .iter()
        .filter(|(k, _)| k.starts_with("panel_rate_limit_refusals_total{"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(by_limit, limited as f64, "{s:?}");
    println!("{limited} of 20 flood writes were rate-limited");

    // Every family a scrape shows, for the report.
    let families: BTreeSet<&str> = s.keys().map(|k| k.split('{').next().unwrap_or(k)).collect();
    println!("families: {families:?}");

    // Alone, a replica has no leader (or, if it led, no quorum): not ready, still live.
    let alone = follower;
    for (i, r) in replicas.iter_mut().enumerate() {
        if i != alone {
            r.take().unwrap().kill();
        }
    }
    let (code, body) = poll("/readyz 503 on the replica left alone", || {
        get(&metrics[alone], "/readyz").filter(|(c, _)| *c == 503)
    });
    assert!(body.contains("not ready"), "{code} {body}");
    println!("alone: {}", body.trim());
    assert_eq!(get(&metrics[alone], "/livez").unwrap().0, 200);
    let s = scrape(&metrics[alone]);
    assert_eq!(at(&s, "panel_raft_role{role=\"Leader\"}"), 0.0, "{s:?}");
}

#[test]
fn the_strict_checker_refuses_what_prometheus_would() {
    let ok = "# HELP a_total A.\n# TYPE a counter\na_total{x=\"1\"} 2\n# EOF\n";
    assert_eq!(parse(ok).unwrap()["a_total{x=\"1\"}"], 2.0);
    for bad in [
        "a_total 1\n# EOF\n",                                    // undeclared
        "# TYPE a counter\na_total 1\n",                         // no EOF
        "# TYPE a counter\na_total{x=1} 1\n# EOF\n",             // unquoted label
        "# TYPE a counter\na_total one\n# EOF\n",                // value
        "# TYPE a gauge\n# TYPE a gauge\na 1\n# EOF\n",          // declared twice
        "# TYPE a counter\na_total -1\n# EOF\n",                 // negative counter
        "# TYPE a counter\na_total{x=\"1\",x=\"2\"} 1\n# EOF\n", // label twice
    ] {
        assert!(parse(bad).is_err(), "accepted {bad:?}");
    }
}

/// A real node process with `metrics_addr` in node.toml: ready while it serves, the judge
/// latency histogram and the commitment counter move with a signed motion, a forged one
/// counts as a signature failure.
#[tokio::test(flavor = "multi_thread")]
async fn node_metrics_time_the_judge_and_count_forged_motions() {
    let tmp = tempfile::tempdir().unwrap();
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut node = start_node(
        tmp.path(),
        "n1",
        SCRIPTED_PERFECT,
        &format!("metrics_addr = \"{metrics}\""),
    )
    .await;
    let m = metrics.clone();
    let ready = tokio::task::spawn_blocking(move || get(&m, "/readyz"))
        .await
        .unwrap();
    assert_eq!(ready.map(|r| r.0), Some(200));
    let panel = vec![node.seat()];
    let mut client = node.client().await;
    client
        .commit(sign(merge_motion("m-1", state(1), panel.clone(), 3_000)))
        .await
        .expect("a signed motion is committed");
    let mut forged = sign(merge_motion("m-2", state(2), panel, 3_000));
    forged.signature[0] ^= 1;
    assert!(client.commit(forged).await.is_err());
    let m = metrics.clone();
    let s = tokio::task::spawn_blocking(move || scrape(&m))
        .await
        .unwrap();
    assert_eq!(
        at(
            &s,
            "panel_node_judge_seconds_count{judge_kind=\"scripted\"}"
        ),
        1.0,
        "{s:?}"
    );
    assert_eq!(at(&s, "panel_node_commitments_total"), 1.0, "{s:?}");
    assert_eq!(
        at(&s, "panel_node_signature_failures_total{what=\"motion\"}"),
        1.0,
        "{s:?}"
    );
    node.terminate();
}
