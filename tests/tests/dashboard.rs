//! `panel dash` in a real browser: `panel up --keep` starts 3 coordinator and 4 arbiter
//! node processes (mutual TLS on every hop) and runs the worked example and a
//! falsification run; the CLI opens a debate with a hostile resolution and puts a motion
//! to the panel; then `panel dash` serves the cluster with the CLI's client identity and
//! Debian's headless Chromium loads every view: `--dump-dom` for the content after load,
//! `--screenshot` for a PNG of each. Plain HTTP checks that other paths are 404, other
//! methods 405, and that a dashboard whose coordinator is down answers 503 naming it.
//!
//! Without Chromium the test fails, unless `PANEL_SKIP_BROWSER=1` (then only the HTTP
//! checks run). `PANEL_DASH_SCREENSHOTS=DIR` keeps the PNGs (docs/dash/ holds two).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use panel_tests::local_panel::{self, ok, text};
use panel_tests::{ChildGuard, free_port, panel};

const HOSTILE: &str = "Resolved: <script>alert('dash')</script> tags render as text.";

/// Debian's headless Chromium, if installed.
fn chromium() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("chromium"))
            .find(|p| p.exists())
    });
    on_path.or_else(|| {
        let p = PathBuf::from("/usr/bin/chromium");
        p.exists().then_some(p)
    })
}

/// One headless Chromium run with a fresh profile, its stdout in a file; killed after 90 s.
fn browse(bin: &Path, work: &Path, n: usize, extra: &[String], url: &str) -> String {
    let profile = work.join(format!("profile-{n}"));
    let out_path = work.join(format!("browser-{n}.out"));
    let err_path = work.join(format!("browser-{n}.err"));
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(&out_path).expect("browser stdout"))
    .stderr(std::fs::File::create(&err_path).expect("browser stderr"));
    let mut guard = ChildGuard::spawn("chromium", cmd);
    let start = Instant::now();
    let status = loop {
        if let Some(st) = guard.child_mut().and_then(|c| c.try_wait().ok().flatten()) {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "chromium did not finish {url} in 90 s: {}",
            std::fs::read_to_string(&err_path).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.success(),
        "chromium failed on {url} ({status}): {}",
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    std::fs::read_to_string(&out_path).unwrap_or_default()
}

/// A plain HTTP/1.1 request: (status code, whole response).
fn http(addr: &str, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the dashboard");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read");
    let resp = text(&buf);
    let code = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, resp)
}

/// Starts `panel dash --listen 127.0.0.1:0` with `cluster` flags and returns it with the
/// address it printed.
fn start_dash(dir: &Path, name: &str, cluster: &[&str]) -> (ChildGuard, String) {
    let out = dir.join(format!("{name}.out"));
    let mut cmd = panel();
    cmd.args(["dash", "--listen", "127.0.0.1:0"])
        .args(cluster)
        .env_remove("PANEL_ADDR")
        .env_remove("PANEL_TLS")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("dash stdout"))
        .stderr(std::fs::File::create(dir.join(format!("{name}.err"))).expect("dash stderr"));
    let mut guard = ChildGuard::spawn(format!("panel dash ({name})"), cmd);
    let start = Instant::now();
    loop {
        let printed = std::fs::read_to_string(&out).unwrap_or_default();
        if let Some(rest) = printed.split("dashboard at http://").nth(1)
            && let Some(addr) = rest.split('/').next()
        {
            return (guard, addr.to_string());
        }
        if let Some(st) = guard.child_mut().and_then(|c| c.try_wait().ok().flatten()) {
            panic!(
                "panel dash exited ({st}): {}",
                std::fs::read_to_string(dir.join(format!("{name}.err"))).unwrap_or_default()
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "panel dash did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_for_log(cluster: &mut local_panel::Cluster, needle: &str, limit: Duration) {
    let start = Instant::now();
    while !cluster.log().contains(needle) {
        if let Some(st) = cluster.exited() {
            panic!("panel up exited early ({st}):\n{}", cluster.log());
        }
        assert!(
            start.elapsed() < limit,
            "panel up did not print {needle:?} in {} s:\n{}",
            limit.as_secs(),
            cluster.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// What each view must show once loaded: (path, screenshot name, what the page holds).
/// `deep` is the path of a motion on a later page of its debate's motions.
fn expectations(deep: &str) -> Vec<(String, &'static str, Vec<&'static str>)> {
    let mut all: Vec<(&str, &'static str, Vec<&'static str>)> = vec![
        (
            "/",
            "overview",
            vec!["Overview", "leader", "motions accepted", "href=\"/record\""],
        ),
        (
            "/debates",
            "debates",
            vec![
                "deb_1",
                "Ledger: totals and merit per canonical row",
                "verdict 2 · side B",
                "6.36",
                "4.20",
                "6.40",
                "Clear winner",
                "&lt;script&gt;alert('dash')&lt;/script&gt;",
            ],
        ),
        (
            "/motions",
            "motions",
            vec![
                "Rulings, stance A",
                "Rulings, stance B",
                "ACCEPTED",
                "advance from framing",
                "<form class=\"filters\" method=\"get\" action=\"/motions\"",
                "page 1 of",
                "next (older) »",
                "href=\"/debates/deb_3\"",
                "auto-refresh off",
            ],
        ),
        (
            "/motions?debate=deb_1&outcome=deadlocked",
            "motions-deadlocked",
            vec![
                // The worked example's tier verification without a receipt from stance A:
                // its reason as a sentence.
                "DEADLOCKED",
                "no arbiter of stance A confirmed the source with a retrieval receipt",
                "of debate deb_1, deadlocked, newest first",
                "<option value=\"deadlocked\" selected",
                "href=\"/arbiters/arb-north-a\"",
            ],
        ),
        (
            "/motions?page=2&refresh=60",
            "motions-page-2",
            vec![
                "page 2 of",
                "« previous (newer)",
                "<meta http-equiv=\"refresh\" content=\"60\">",
                "auto-refresh every 60 s",
                "Rulings, stance A",
            ],
        ),
        (
            "/debates/deb_1",
            "debate",
            vec![
                "Debate deb_1",
                "Ledger: totals and merit per canonical row",
                "Claims",
                "<b>merged by</b> <a href=\"/motions/",
                "Who sat on its panels",
                "href=\"/arbiters/arb-north-a\"",
                "Motions, newest first",
                "Appeals",
            ],
        ),
        (
            "/debates/deb_3",
            "debate-hostile",
            vec![
                "&lt;script&gt;alert('dash')&lt;/script&gt;",
                "advance from framing",
            ],
        ),
        (
            "/arbiters/arb-north-a",
            "arbiter",
            vec![
                "Arbiter arb-north-a",
                "dissent rate",
                "counted rulings on accepted motions were against the accepted outcome",
                "appeals lost",
                "Motions it sat on, newest first",
                "href=\"/debates/deb_1\"",
                "href=\"/motions?arbiter=arb-north-a\"",
                "Exam reliability: arb-north-a",
                // The exam read as `panel arbiter show` reads it (docs/CALIBRATION.md).
                "Bias probes",
                "order flip rate",
                "Calibration per topic",
                "challenge",
                "8 binary items were held back from the admission score",
            ],
        ),
        (
            "/arbiters",
            "arbiters",
            vec![
                "arb-south-b",
                "northwind",
                "sim-lineage-y",
                "Exam reliability: arb-north-a",
                "Observed frequency of yes",
                "Not flagged",
            ],
        ),
        (
            "/record",
            "record",
            vec![
                "Witnesses",
                "northwind",
                "southbank",
                "(northwind) at",
                "(southbank) at",
            ],
        ),
        (
            "/runs",
            "runs",
            vec![
                "Falsify",
                "finished",
                "the run's report",
                "href=\"/motions/",
            ],
        ),
        (
            deep,
            "motion",
            vec!["Put by debate", "href=\"/debates/deb_1\"", "Seats"],
        ),
    ];
    all.drain(..)
        .map(|(p, n, w)| (p.to_string(), n, w))
        .collect()
}

/// The motion pages a page links, in the order it links them (`/motions/ID`).
fn motion_links(html: &str) -> Vec<String> {
    html.split("href=\"/motions/")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|id| format!("/motions/{id}"))
        .collect()
}

/// The motion count a motions page states ("N motion(s) ...").
fn motions_count(html: &str) -> usize {
    html.split("id=\"paging\">")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no motion count in {html}"))
}

/// The oldest motion of `debate`, from the last page of its page's motions table: a
/// motion no first page shows.
fn oldest_motion(addr: &str, debate: &str) -> String {
    let mut page = 1;
    loop {
        let (code, html) = http(addr, "GET", &format!("/debates/{debate}?page={page}"));
        assert_eq!(code, 200, "{html}");
        let table = html.split("class=\"motions\"").nth(1).unwrap_or_default();
        if !html.contains("next (older) »") {
            return motion_links(table)
                .pop()
                .unwrap_or_else(|| panic!("no motions on {debate}: {html}"));
        }
        page += 1;
    }
}

#[test]
fn the_dashboard_shows_every_view_in_a_real_browser() {
    let browser = chromium();
    let skip = ["PANEL_SKIP_BROWSER", "PANEL_SKIP_MISSING"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|v| v == "1"));
    assert!(
        browser.is_some() || skip,
        "Debian's chromium is not installed: run `bash scripts/test` (it installs it), or set PANEL_SKIP_MISSING=1 to run the HTTP checks only"
    );
    let t0 = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path();

    // A dashboard whose coordinator is down answers 503 naming the address.
    let empty = work.join("no-cluster");
    std::fs::create_dir_all(&empty).expect("empty state");
    let dead = format!("127.0.0.1:{}", free_port());
    let (mut down, down_addr) = start_dash(
        work,
        "down",
        &["--addr", &dead, "--state", empty.to_str().expect("utf-8")],
    );
    let (code, body) = http(&down_addr, "GET", "/debates");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains(&dead), "the 503 page names {dead}: {body}");
    down.kill();

    let mut cluster = local_panel::start(work, &["--procedure", "falsify"]);
    wait_for_log(
        &mut cluster,
        "cluster left running",
        Duration::from_secs(300),
    );
    let st = cluster.state.clone();
    let up_secs = t0.elapsed().as_secs();

    // A few writes through the CLI: a debate whose resolution is markup, and a motion.
    let created = ok(
        &st,
        &[
            "debate",
            "new",
            "--resolution",
            HOSTILE,
            "--pos-a",
            "<b>bold</b> is text too",
            "--pos-b",
            "it is not",
            // The views are under test here, not the acceptance rule.
            "--policy",
            "head-count",
            "--simulation",
            "--json",
        ],
    );
    assert!(created.contains("deb_3"), "{created}");
    let adv = ok(
        &st,
        &["ask", "--debate", "deb_3", "--advance", "framing", "--wait"],
    );
    assert!(adv.contains("ACCEPTED"), "{adv}");

    let (mut dash, addr) = start_dash(work, "dash", &["--state", st.to_str().expect("utf-8")]);

    // Read-only, and a clear 404.
    let (code, body) = http(&addr, "GET", "/no-such-view");
    assert_eq!(code, 404, "{body}");
    assert!(body.contains("there is no page at /no-such-view"), "{body}");
    for (method, path) in [("POST", "/"), ("PUT", "/debates"), ("DELETE", "/record")] {
        let (code, body) = http(&addr, method, path);
        assert_eq!(code, 405, "{method} {path}: {body}");
        assert!(body.contains("read-only"), "{body}");
    }
    // A motion no first page shows has its own page, by id.
    let deep = oldest_motion(&addr, "deb_1");
    let (_, first) = http(&addr, "GET", "/motions");
    assert!(
        !motion_links(&first).contains(&deep),
        "{deep} is on the first motions page already: pick an older one"
    );
    // Every view over plain HTTP: 200, escaped, no script, the security policy sent.
    for (path, _, want) in expectations(&deep) {
        let (code, body) = http(&addr, "GET", &path);
        assert!(
            body.to_ascii_lowercase()
                .contains("content-security-policy: default-src 'none'; style-src 'unsafe-inline'"),
            "GET {path} without the security policy: {body}"
        );
        assert_eq!(code, 200, "GET {path}: {body}");
        assert!(
            !body.contains("<script"),
            "GET {path} holds a script element"
        );
        for w in want.iter().filter(|w| !w.contains('\'')) {
            assert!(body.contains(w), "GET {path} lacks {w:?}");
        }
    }
    let (_, debates) = http(&addr, "GET", "/debates");
    assert!(
        debates.contains("&lt;script&gt;alert(&#39;dash&#39;)&lt;/script&gt;"),
        "the hostile resolution is escaped on the wire"
    );
    assert!(
        debates.contains("href=\"/debates/deb_1\""),
        "the list links each debate's page"
    );

    // Filters narrow, and combine.
    let count = |path: &str| {
        let (code, html) = http(&addr, "GET", path);
        assert_eq!(code, 200, "GET {path}: {html}");
        motions_count(&html)
    };
    let all = count("/motions?debate=deb_1");
    let deadlocked = count("/motions?debate=deb_1&outcome=deadlocked");
    let tiers = count("/motions?debate=deb_1&outcome=deadlocked&kind=TierVerification");
    let north = count("/motions?debate=deb_1&organisation=northwind&arbiter=arb-north-a");
    assert!(
        0 < deadlocked && deadlocked < all && 0 < tiers && tiers <= deadlocked,
        "deb_1: {all} motions, {deadlocked} deadlocked, {tiers} deadlocked tier verifications"
    );
    assert!(
        0 < north && north <= all,
        "deb_1: arb-north-a sat on {north} of {all}"
    );
    // deb_3 has only its advance motion: no merge passes, and the page says so.
    let (_, html) = http(&addr, "GET", "/motions?debate=deb_3&kind=Merge");
    assert_eq!(motions_count(&html), 0, "{html}");
    assert!(html.contains("No motion matches these filters"), "{html}");
    let (_, html) = http(&addr, "GET", "/motions?debate=deb_1&outcome=deadlocked");
    assert!(
        !html.contains("<div class=\"accepted\">"),
        "only deadlocks: {html}"
    );

    // Bad parameters are a 400 naming the parameter; unknown ids a 404.
    for (path, code, says) in [
        ("/motions?page=0", 400, "page=0 is not a page number"),
        ("/motions?page=x", 400, "page=x is not a page number"),
        ("/motions?page=9999", 400, "page=9999 is past the last page"),
        ("/motions?outcome=won", 400, "outcome=won is not an outcome"),
        (
            "/motions?kind=Verdict",
            400,
            "kind=Verdict is not a motion kind",
        ),
        (
            "/motions?debate=deb_99",
            400,
            "debate=deb_99 names no debate",
        ),
        (
            "/motions?arbiter=nobody",
            400,
            "arbiter=nobody names no registered arbiter",
        ),
        (
            "/motions?organisation=acme",
            400,
            "organisation=acme is no registered arbiter",
        ),
        ("/debates/deb_1?page=0", 400, "page=0 is not a page number"),
        (
            "/arbiters/arb-north-a?page=99",
            400,
            "page=99 is past the last page",
        ),
        (
            "/?refresh=1",
            400,
            "refresh=1 is not an auto-refresh period",
        ),
        (
            "/motions/no-such-motion",
            404,
            "there is no motion no-such-motion",
        ),
        ("/debates/deb_99", 404, "there is no debate deb_99"),
        ("/arbiters/nobody", 404, "there is no arbiter nobody"),
    ] {
        let (got, body) = http(&addr, "GET", path);
        assert_eq!(got, code, "GET {path}: {body}");
        assert!(
            body.contains(says),
            "GET {path} does not say {says:?}: {body}"
        );
        assert!(
            body.to_ascii_lowercase()
                .contains("content-security-policy:"),
            "GET {path}: {body}"
        );
    }

    let keep = std::env::var_os("PANEL_DASH_SCREENSHOTS").map(PathBuf::from);
    if let Some(bin) = browser.as_deref() {
        for (n, (path, name, want)) in expectations(&deep).into_iter().enumerate() {
            let url = format!("http://{addr}{path}");
            let dom = browse(bin, work, 2 * n, &["--dump-dom".into()], &url);
            assert!(
                dom.contains("Crucible Panel"),
                "{url}: the browser did not load the page:\n{dom}"
            );
            assert!(
                !dom.contains("<script"),
                "{url}: a script element in the DOM"
            );
            for w in &want {
                assert!(dom.contains(w), "{url}: the loaded DOM lacks {w:?}");
            }
            let png = work.join(format!("{name}.png"));
            browse(
                bin,
                work,
                2 * n + 1,
                &[
                    format!("--screenshot={}", png.display()),
                    "--window-size=1280,900".into(),
                    "--hide-scrollbars".into(),
                ],
                &url,
            );
            let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{url}: no screenshot: {e}"));
            assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{url}: not a PNG");
            assert!(
                bytes.len() > 20_000,
                "{url}: a {} byte screenshot is blank or nearly so",
                bytes.len()
            );
            if let Some(k) = &keep {
                std::fs::create_dir_all(k).expect("screenshot dir");
                std::fs::copy(&png, k.join(format!("{name}.png"))).expect("keep screenshot");
            }
        }
    } else {
        eprintln!("PANEL_SKIP_BROWSER=1: the browser checks were skipped");
    }
    eprintln!(
        "dashboard test: cluster ready in {up_secs} s, whole test {} s",
        t0.elapsed().as_secs()
    );
    dash.kill();
    cluster.stop();
}
