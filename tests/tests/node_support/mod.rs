//! Shared setup for the `node_*` cross-process tests: key files made by the real
//! `panel node keygen`, node configs, real `panel node run` processes on loopback ports,
//! gRPC clients, and motion builders.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use panel_proto::SigningKey;
use panel_proto::pb::arbiter_node_client::ArbiterNodeClient;
use panel_proto::pb::{
    ContentProjection, Decision, ExpectedAnswer, IdentityRequest, Motion, MotionKind, PanelSeat,
    ProjectionItem, Side,
};
use panel_tests::{ChildGuard, free_port, panel};
use tonic::transport::Channel;

pub const PERFECT_PROFILES: &str = r#"
[profiles.perfect]
accuracy = 1.0
seed = 1

[profiles.leans_b]
accuracy = 0.8
bias_side = "B"
bias = 0.2
noise = 0.05
seed = 2
"#;

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The motion key of the test coordinator ([`panel_tests::TEST_MOTION_SEED`]); every node
/// these tests start trusts it (`coordinator_keys`).
pub fn motion_key() -> SigningKey {
    SigningKey::from_bytes(&panel_tests::TEST_MOTION_SEED)
}

/// The `coordinator_keys` line of a node config that trusts [`motion_key`].
pub fn coordinator_keys_toml() -> String {
    format!(
        "coordinator_keys = [\"{}\"]",
        hex::encode(motion_key().verifying_key().to_bytes())
    )
}

/// Signs a motion as the test coordinator does (after every change to it).
pub fn sign(m: Motion) -> Motion {
    panel_proto::sign_motion(&motion_key(), m)
}

/// Runs `panel node keygen` and returns the key (read back from the file it wrote).
pub fn keygen(path: &Path) -> SigningKey {
    let out = panel()
        .args(["node", "keygen", "--out"])
        .arg(path)
        .output()
        .expect("run panel node keygen");
    assert!(
        out.status.success(),
        "keygen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(path).unwrap();
    let seed = text
        .lines()
        .find_map(|l| l.strip_prefix("seed:"))
        .expect("seed line")
        .trim();
    SigningKey::from_bytes(&hex::decode(seed).unwrap().try_into().unwrap())
}

/// A running `panel node run` process.
pub struct NodeProc {
    pub name: String,
    pub dir: PathBuf,
    pub port: u16,
    pub key: SigningKey,
    pub config: PathBuf,
    pub guard: ChildGuard,
}

impl NodeProc {
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn public_key(&self) -> Vec<u8> {
        self.key.verifying_key().to_bytes().to_vec()
    }

    pub fn seat(&self) -> PanelSeat {
        PanelSeat {
            public_key: self.public_key(),
            endpoint: self.endpoint(),
        }
    }

    pub async fn client(&self) -> ArbiterNodeClient<Channel> {
        ArbiterNodeClient::connect(self.endpoint())
            .await
            .expect("connect to node")
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.guard.id().to_string();
        let st = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(st.success());
        let child = self.guard.child_mut().expect("child running");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "node {} did not stop after SIGTERM",
                self.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the process again with the same config, key and data.
    pub async fn restart(&mut self) {
        self.port = free_port();
        self.guard = spawn(&self.name, &self.config, self.port, &self.dir);
        wait_ready(&self.endpoint()).await;
    }
}

fn spawn(name: &str, config: &Path, port: u16, dir: &Path) -> ChildGuard {
    spawn_env(name, config, port, dir, &[])
}

fn spawn_env(
    name: &str,
    config: &Path,
    port: u16,
    dir: &Path,
    envs: &[(&str, &str)],
) -> ChildGuard {
    let mut cmd = panel();
    cmd.envs(envs.iter().copied());
    cmd.args(["node", "run", "--insecure-loopback", "--config"])
        .arg(config)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("node.log")).unwrap());
    ChildGuard::spawn(name, cmd)
}

/// Waits until the node answers Identity (bounded; not a timing assertion).
pub async fn wait_ready(endpoint: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(mut c) = ArbiterNodeClient::connect(endpoint.to_owned()).await
            && c.identity(IdentityRequest {}).await.is_ok()
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "node at {endpoint} never became ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Writes a config (with the given `[judge]` section and extra TOML) and starts a node.
pub async fn start_node(root: &Path, name: &str, judge_toml: &str, extra: &str) -> NodeProc {
    start_node_env(root, name, judge_toml, extra, &[]).await
}

/// [`start_node`] with extra environment variables for the node process.
pub async fn start_node_env(
    root: &Path,
    name: &str,
    judge_toml: &str,
    extra: &str,
    envs: &[(&str, &str)],
) -> NodeProc {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("profiles.toml"), PERFECT_PROFILES).unwrap();
    let key = keygen(&dir.join("arbiter.key"));
    let config = dir.join("node.toml");
    std::fs::write(
        &config,
        format!(
            "key_file = \"arbiter.key\"\ndata_dir = \"data\"\norganisation = \"org-{name}\"\n\
             model_family = \"scripted\"\n{}\n{extra}\n\n[[stances]]\ndebate_id = \"d-1\"\nside = \"A\"\ncredence = 0.6\n\n{judge_toml}\n",
            coordinator_keys_toml()
        ),
    )
    .unwrap();
    let port = free_port();
    let guard = spawn_env(name, &config, port, &dir, envs);
    let node = NodeProc {
        name: name.into(),
        dir,
        port,
        key,
        config,
        guard,
    };
    wait_ready(&node.endpoint()).await;
    node
}

pub const SCRIPTED_PERFECT: &str =
    "[judge]\nkind = \"scripted\"\nprofiles = \"profiles.toml\"\nprofile = \"perfect\"";

pub fn state(label: u8) -> Vec<u8> {
    vec![label; 32]
}

/// A merge motion whose truth hint says ACCEPT; commit window closes in `commit_in_ms`.
pub fn merge_motion(
    id: &str,
    state_hash: Vec<u8>,
    panel: Vec<PanelSeat>,
    commit_in_ms: i64,
) -> Motion {
    let now = now_ms();
    Motion {
        motion_id: id.into(),
        debate_id: "d-1".into(),
        kind: MotionKind::Merge as i32,
        state_hash,
        projection: Some(ContentProjection {
            question: "Should the candidate version replace the incumbent?".into(),
            items: vec![
                ProjectionItem {
                    label: "candidate".into(),
                    text: "Cites a verified T2 source.".into(),
                    side: Side::A as i32,
                    citations: vec![],
                },
                ProjectionItem {
                    label: "incumbent".into(),
                    text: "Cites a T4 blog post.".into(),
                    side: Side::A as i32,
                    citations: vec![],
                },
            ],
            resolution: "Remote work raises productivity.".into(),
            affirmative_favours: Side::A as i32,
            exam_item: None,
            expected: Some(ExpectedAnswer {
                decision: Decision::Accept as i32,
                ..Default::default()
            }),
            procedure: None,
        }),
        commit_deadline_unix_ms: now + commit_in_ms,
        reveal_deadline_unix_ms: now + commit_in_ms + 120_000,
        panel,
        signature: Vec::new(),
        signer_key: Vec::new(),
        seals: Vec::new(),
    }
}

/// Sleeps until the motion's commit window has closed.
pub async fn wait_past(deadline_ms: i64) {
    let left = deadline_ms - now_ms() + 50;
    if left > 0 {
        tokio::time::sleep(Duration::from_millis(left as u64)).await;
    }
}
