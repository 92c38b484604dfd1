//! Shared harness for the cross-process tests in `tests/tests/`: locate the real `panel`
//! binary, start it as a child process, and make sure no child outlives its test. The
//! processes, ports, replica flags and group init are the coordinator's local cluster
//! (`panel_coordinator::local`, as `panel up` and the bench start theirs); what is here
//! panics instead of returning errors, as a test harness may.

pub mod local_panel;
pub mod run_folder;
pub mod tls;
pub mod tls_node;

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use panel_coordinator::local::{self, LocalCluster, Process, ReplicaFlags, Security};
use panel_transport::Transport;

/// Path of the `panel` binary built by the same `cargo test --workspace` run.
///
/// Test binaries live in `<target>/<profile>/deps/`; the `panel` binary sits one level up.
/// `cli/tests/` holds an integration test, which makes cargo build the binary before any
/// test runs.
pub fn panel_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary sits in <target>/<profile>/deps");
    let bin = profile_dir.join(format!("panel{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build -p panel-cli` or `cargo test --workspace`",
        bin.display()
    );
    bin
}

/// A `panel` command ready for arguments.
pub fn panel() -> Command {
    Command::new(panel_bin())
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    local::free_port().expect("bind an ephemeral loopback port")
}

/// A child process that is stopped (SIGTERM, SIGKILL after 5 s) and reaped when dropped,
/// so a failing test leaves nothing running; SIGTERM first, so a process that supervises
/// children of its own (`panel up`) stops them too.
pub struct ChildGuard {
    pub name: String,
    process: Process,
}

impl ChildGuard {
    pub fn spawn(name: impl Into<String>, mut cmd: Command) -> Self {
        let name = name.into();
        let process = Process::spawn(name.clone(), &mut cmd).unwrap_or_else(|e| panic!("{e}"));
        Self { name, process }
    }

    pub fn id(&self) -> u32 {
        self.process.id()
    }

    /// Kill with SIGKILL (the `kill -9` of fault tests) and reap.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Ask the process to stop (SIGTERM), as a service manager does.
    pub fn terminate(&mut self) {
        self.process.terminate();
    }

    pub fn child_mut(&mut self) -> Option<&mut Child> {
        self.process.child_mut()
    }
}

/// `panel coordinator run` for replica `id` (1-based) listening on `addr`, with its data
/// under `root/r{id}`, short Raft timeouts (tests elect a leader in well under a second)
/// and test commands on (`Note`, `SetAdmission`, raw motions). Output goes nowhere unless
/// the caller sets it.
pub fn replica_command(root: &std::path::Path, id: usize, addr: &str) -> Command {
    loopback_replica(root, id, addr, true)
}

/// [`replica_command`] as a production replica runs: clients may send client commands
/// only. Attack tests use it. Plaintext on loopback (`--insecure-loopback`): the transport
/// attacks (`attack_transport.rs`) start TLS clusters of their own.
pub fn production_replica_command(root: &std::path::Path, id: usize, addr: &str) -> Command {
    loopback_replica(root, id, addr, false)
}

/// Raft timeouts short enough for a test to elect a leader in well under a second.
pub const FAST_RAFT: [&str; 6] = [
    "--heartbeat-ms",
    "50",
    "--election-min-ms",
    "300",
    "--election-max-ms",
    "600",
];

fn loopback_replica(root: &std::path::Path, id: usize, addr: &str, test_commands: bool) -> Command {
    let flags = ReplicaFlags {
        id: id as u64,
        listen: addr.to_owned(),
        data_dir: root.join(format!("r{id}")),
        security: Security::Loopback {
            motion_key: Some(test_motion_key_file(root)),
        },
        test_commands,
    };
    let mut cmd = panel();
    cmd.args(flags.args())
        .args(FAST_RAFT)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd
}

/// Arguments of `panel coordinator init` making `addrs` (replica ids 1, 2, ...) one group.
pub fn init_args(addrs: &[String]) -> Vec<String> {
    let mut args: Vec<String> = ["coordinator", "init", "--addr", &addrs[0]]
        .map(String::from)
        .to_vec();
    for (i, a) in addrs.iter().enumerate() {
        args.push("--member".into());
        args.push(format!("{}={a}", i + 1));
    }
    args
}

/// One replica process per address (ids 1, 2, ...), each from [`replica_command`] after
/// `tweak(id, command)` adds what the test needs (flags, output files).
pub fn spawn_replicas(
    root: &std::path::Path,
    addrs: &[String],
    mut tweak: impl FnMut(usize, &mut Command),
) -> Vec<ChildGuard> {
    addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut cmd = replica_command(root, i + 1, a);
            tweak(i + 1, &mut cmd);
            ChildGuard::spawn(format!("replica {}", i + 1), cmd)
        })
        .collect()
}

/// Makes the plaintext replicas at `addrs` one group (`Admin.Init` at the first, as
/// `panel coordinator init` does), asking again while they start listening, for at most
/// 30 seconds.
pub fn init_cluster(addrs: &[String]) {
    init_cluster_over(addrs, Transport::InsecureLoopback);
}

/// [`init_cluster`] dialling over `transport` (an operator's identity under TLS).
pub fn init_cluster_over(addrs: &[String], transport: Transport) {
    let cluster = LocalCluster::new(addrs.to_vec(), transport);
    local::block_on(cluster.init(Duration::from_secs(30)))
        .and_then(|r| r)
        .unwrap_or_else(|e| panic!("cluster init over {addrs:?}: {e}"));
}

/// Production replicas (no test commands) at `addrs`, initialised as one group.
pub fn start_production_cluster(root: &std::path::Path, addrs: &[String]) -> Vec<ChildGuard> {
    let guards = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            ChildGuard::spawn(
                format!("replica {}", i + 1),
                production_replica_command(root, i + 1, a),
            )
        })
        .collect();
    init_cluster(addrs);
    guards
}

/// `n` loopback addresses with ports that were free a moment ago.
pub fn loopback_addrs(n: usize) -> Vec<String> {
    local::loopback_addrs(n).expect("bind ephemeral loopback ports")
}

/// Seed of the motion key every replica the harness starts signs motions with
/// (docs/WIRE.md "Motion, layout v1"). A fixed test value, never a real key: node tests
/// sign their own motions with it and list its public key in `coordinator_keys`.
pub const TEST_MOTION_SEED: [u8; 32] = [0x4d; 32];

/// Writes [`TEST_MOTION_SEED`] to `<root>/motion.key` (mode 0600) once and returns the
/// path, so all replicas under `root` share one motion key, as production replicas do.
pub fn test_motion_key_file(root: &std::path::Path) -> PathBuf {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = root.join("motion.key");
    if !path.exists() {
        std::fs::create_dir_all(root).expect("create the test root");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .expect("write the test motion key");
        f.write_all(&TEST_MOTION_SEED)
            .expect("write the test motion key");
    }
    path
}

/// Calls `f` every 50 ms until it returns a value, failing the test after `deadline` with
/// `what` named.
pub fn poll_until<T>(
    what: &str,
    deadline: std::time::Duration,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
