//! `panel coordinator bench --soak-secs N`: a sustained paced load (docs/RELIABILITY.md) over
//! the same cluster and decisions as the bench, long enough for snapshots and log purges
//! to happen many times. Every sample window (a minute by default) reports throughput,
//! latency percentiles and the worst write, each replica's resident memory and the sizes
//! of its two redb files, so growth and stalls show as they happen. Figures are printed,
//! never asserted.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, mpsc};

use super::{BenchError, BenchOptions, Cluster, Prepared, cpu_secs, decision, one_decision, pct};
use crate::client;

#[derive(Debug, Clone)]
pub struct SoakOptions {
    pub secs: u64,
    /// Decisions per second offered (about half the measured maximum).
    pub rate: u64,
    /// Length of one reported window.
    pub sample_secs: u64,
    /// The soak stops early once a replica's resident memory passes this, so a replica
    /// that grows with its state cannot exhaust the machine.
    pub max_rss_mib: u64,
}

/// What one replica looked like at the end of a window.
#[derive(Debug, Clone, Default)]
pub struct ReplicaSample {
    pub rss_kib: u64,
    pub log_bytes: u64,
    pub state_bytes: u64,
}

/// One window of the soak.
#[derive(Debug, Clone, Default)]
pub struct Window {
    pub decisions: usize,
    pub not_accepted: usize,
    /// Decisions not offered because too many were still in flight (the cluster fell
    /// behind by more than [`IN_FLIGHT_SECS`] of load).
    pub shed: usize,
    pub decision_ms: Vec<f64>,
    pub replicas: Vec<ReplicaSample>,
    /// The leader's log and snapshot positions at the end of the window.
    pub last_log_index: u64,
    pub snapshot_index: u64,
    pub purged_index: u64,
    pub replica_cpu_secs: f64,
}

#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    pub rate: u64,
    pub sample_secs: u64,
    pub windows: Vec<Window>,
    pub terms: (u64, u64),
    /// Why the soak ended before its time, if it did.
    pub stopped_early: Option<String>,
    /// Accepted decisions in all.
    pub decisions: usize,
}

/// In-flight decisions are capped at this many seconds of offered load, so a stalled
/// cluster makes the soak shed load (and say so) instead of growing without bound.
pub const IN_FLIGHT_SECS: u64 = 10;

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn file_len(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

fn sample_replicas(cluster: &Cluster, dir: &std::path::Path) -> Vec<ReplicaSample> {
    cluster
        .replicas
        .pids()
        .iter()
        .enumerate()
        .map(|(i, pid)| {
            let data = dir.join(format!("r{}", i + 1));
            ReplicaSample {
                rss_kib: rss_kib(*pid),
                log_bytes: file_len(&data.join("log.redb")),
                state_bytes: file_len(&data.join("state.redb")),
            }
        })
        .collect()
}

/// Runs the soak: `soak.rate` decisions per second for `soak.secs`, one window report per
/// `soak.sample_secs`. Decisions are signed while the soak runs, on a thread of their own
/// (a presigned 10-minute soak would hold gigabytes).
pub async fn run(opts: BenchOptions, soak: SoakOptions) -> Result<SoakReport, BenchError> {
    let prepared = super::prepare(&opts).await?;
    let mut report = SoakReport {
        rate: soak.rate,
        sample_secs: soak.sample_secs.max(1),
        terms: (prepared.term, 0),
        ..SoakReport::default()
    };
    let t = prepared.cluster.replicas.transport().clone();
    let windows_n = soak.secs.div_ceil(report.sample_secs).max(1) as usize;
    let windows = Arc::new(Mutex::new(vec![Window::default(); windows_n]));

    let (tx, mut rx) = mpsc::channel(soak.rate.max(1) as usize * 2);
    let signer = {
        let keys = prepared.keys.clone();
        let motion_key = prepared
            .cluster
            .federation
            .as_ref()
            .map(|f| f.motion_key.clone());
        std::thread::spawn(move || {
            for n in 0.. {
                if tx
                    .blocking_send(decision(n, &keys, motion_key.as_ref()))
                    .is_err()
                {
                    break;
                }
            }
        })
    };

    let shared =
        client::StreamWriter::open(&mut client::coordinator(&t, &prepared.leader)?).await?;
    let in_flight = Arc::new(Semaphore::new((soak.rate * IN_FLIGHT_SECS).max(1) as usize));
    let window_len = Duration::from_secs(report.sample_secs);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(soak.secs);
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / soak.rate.max(1) as f64));
    let mut next_sample = start + window_len;
    let mut cpu0 = super::cluster_cpu(&prepared.cluster);
    let mut n = 0usize;
    let mut tasks = tokio::task::JoinSet::new();
    while Instant::now() < deadline {
        tick.tick().await;
        let now = Instant::now();
        let w =
            (((now - start).as_secs_f64() / window_len.as_secs_f64()) as usize).min(windows_n - 1);
        if now >= next_sample {
            next_sample += window_len;
            let cpu = super::cluster_cpu(&prepared.cluster);
            let rss = close_window(&prepared, &windows, w.saturating_sub(1), cpu - cpu0).await;
            cpu0 = cpu;
            if rss > soak.max_rss_mib * 1024 {
                report.stopped_early = Some(format!(
                    "a replica's resident memory reached {} MiB (over --soak-max-rss-mib {}) \
                     after {:.0} s",
                    rss / 1024,
                    soak.max_rss_mib,
                    (now - start).as_secs_f64()
                ));
                break;
            }
        }
        let Ok(permit) = in_flight.clone().try_acquire_owned() else {
            lock(&windows)[w].shed += 1;
            continue;
        };
        let Some(cmds) = rx.recv().await else { break };
        let (c, windows) = (shared.clone(), windows.clone());
        tasks.spawn(async move {
            let result = one_decision(&c, n, &cmds).await;
            drop(permit);
            let mut g = lock(&windows);
            match result {
                Ok((ok, _, d)) => {
                    g[w].decisions += usize::from(ok);
                    g[w].not_accepted += usize::from(!ok);
                    g[w].decision_ms.push(d);
                }
                Err(_) => g[w].not_accepted += 1,
            }
        });
        n += 1;
        // Reap finished tasks so the set stays as small as what is in flight.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    let cpu = super::cluster_cpu(&prepared.cluster);
    let last = match report.stopped_early {
        Some(_) => (((Instant::now() - start).as_secs_f64() / window_len.as_secs_f64()) as usize)
            .min(windows_n - 1),
        None => windows_n - 1,
    };
    close_window(&prepared, &windows, last, cpu - cpu0).await;
    drop(rx);
    let _ = signer.join();
    report.terms.1 = super::term(&prepared.cluster).await;
    let mut all = std::mem::take(&mut *lock(&windows));
    all.truncate(last + 1);
    report.decisions = all.iter().map(|w| w.decisions).sum();
    report.windows = all;
    prepared.finish(&opts);
    Ok(report)
}

fn lock(w: &Mutex<Vec<Window>>) -> std::sync::MutexGuard<'_, Vec<Window>> {
    w.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Records the replicas' memory and files and the leader's log positions at the end of
/// window `w`; returns the largest replica's resident memory in KiB.
async fn close_window(p: &Prepared, windows: &Mutex<Vec<Window>>, w: usize, cpu: f64) -> u64 {
    let replicas = sample_replicas(&p.cluster, &p.dir);
    let largest = replicas.iter().map(|r| r.rss_kib).max().unwrap_or(0);
    let status = client::status(p.cluster.replicas.transport(), &p.leader)
        .await
        .ok();
    let mut g = lock(windows);
    let win = &mut g[w];
    win.replicas = replicas;
    win.replica_cpu_secs = cpu;
    if let Some(s) = status {
        win.last_log_index = s.last_log_index;
        win.snapshot_index = s.snapshot_index;
        win.purged_index = s.purged_index;
    }
    largest
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

impl SoakReport {
    pub fn render(&self) -> String {
        let mut out = format!(
            "coordinator soak: 3 replicas, {} decisions/s offered, one row per {} s \
             (latency = whole decision, OpenMotion + RecordOutcome)\n\
             {:>4} {:>8} {:>6} {:>5} {:>8} {:>8} {:>8} {:>22} {:>22} {:>22} {:>9} {:>9} {:>9} {:>6}\n",
            self.rate,
            self.sample_secs,
            "win",
            "decis/s",
            "failed",
            "shed",
            "p50 ms",
            "p99 ms",
            "max ms",
            "RSS MiB r1/r2/r3",
            "log.redb MiB",
            "state.redb MiB",
            "log index",
            "snapshot",
            "purged",
            "cpu/s",
        );
        for (i, w) in self.windows.iter().enumerate() {
            let mut ms = w.decision_ms.clone();
            let max = ms.iter().copied().fold(f64::NAN, f64::max);
            let three = |f: &dyn Fn(&ReplicaSample) -> f64| {
                w.replicas
                    .iter()
                    .map(|r| format!("{:.0}", f(r)))
                    .collect::<Vec<_>>()
                    .join("/")
            };
            out.push_str(&format!(
                "{:>4} {:>8.0} {:>6} {:>5} {:>8.2} {:>8.2} {:>8.1} {:>22} {:>22} {:>22} {:>9} {:>9} {:>9} {:>6.2}\n",
                i + 1,
                w.decisions as f64 / self.sample_secs as f64,
                w.not_accepted,
                w.shed,
                pct(&mut ms, 0.5),
                pct(&mut ms, 0.99),
                max,
                three(&|r| r.rss_kib as f64 / 1024.0),
                three(&|r| mib(r.log_bytes)),
                three(&|r| mib(r.state_bytes)),
                w.last_log_index,
                w.snapshot_index,
                w.purged_index,
                w.replica_cpu_secs / self.sample_secs as f64,
            ));
        }
        if let Some(why) = &self.stopped_early {
            out.push_str(&format!("stopped early: {why}\n"));
        }
        out.push_str(&format!(
            "{} decisions accepted; raft term {} at the start, {} at the end; bench client CPU {:.1} s",
            self.decisions,
            self.terms.0,
            self.terms.1,
            cpu_secs(None)
        ));
        out
    }
}
