//! Network namespaces the nemesis creates for one cluster and removes again.
//!
//! Each replica runs in its own namespace with two veth links into a hub namespace: a
//! *peer* link (replica-to-replica Raft and forwarding traffic, bridge `brp`) and a
//! *client* link (the test's clients, bridge `brc`). The test process reaches the client
//! bridge through one more veth pair whose root-side end is the only thing this module puts
//! in the root namespace; nothing is routed further, so traffic stays inside. A partition
//! takes a replica's peer link down on the hub side: the replica is cut off from the other
//! replicas but clients still reach it, which is exactly the case of an isolated leader that
//! clients keep talking to.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// `ip` from iproute2; we run as root (CI does too).
const IP: &str = "/usr/sbin/ip";

#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error(
        "`ip {args}` failed ({status}): {stderr}; the nemesis needs root and network namespaces (CI runs as root)"
    )]
    Ip {
        args: String,
        status: String,
        stderr: String,
    },
    #[error("cannot run {IP}: {0}; install iproute2")]
    Spawn(#[from] std::io::Error),
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The namespaces, bridges and links of one cluster; removed on drop.
pub struct Net {
    tag: String,
    hub: String,
    replicas: Vec<String>,
    root_link: String,
    /// Third octet of the peer (10.201.x.0/24) and client (10.202.x.0/24) subnets.
    subnet: u32,
}

fn ip(args: &[&str]) -> Result<(), NetError> {
    let out = Command::new(IP).args(args).stdin(Stdio::null()).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetError::Ip {
            args: args.join(" "),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

impl Net {
    /// Creates the hub, `n` replica namespaces (ids 1..=n) and their links. Any failure is
    /// an error: the caller must fail loudly, never skip.
    pub fn create(n: usize) -> Result<Self, NetError> {
        let pid = std::process::id();
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("nem{}x{k}", pid % 100_000);
        let subnet = (pid.wrapping_mul(7).wrapping_add(k * 13)) % 250 + 1;
        let mut net = Self {
            hub: format!("{tag}-hub"),
            replicas: (1..=n).map(|i| format!("{tag}-r{i}")).collect(),
            // At most 15 characters: "nem" + 5 digits + "x" + counter + "c".
            root_link: format!("{tag}c"),
            tag,
            subnet,
        };
        // On error, `net` is dropped and removes whatever was already made.
        net.build()?;
        Ok(net)
    }

    fn build(&mut self) -> Result<(), NetError> {
        let hub = self.hub.clone();
        ip(&["netns", "add", &hub])?;
        ip(&["-n", &hub, "link", "set", "lo", "up"])?;
        for br in ["brp", "brc"] {
            ip(&["-n", &hub, "link", "add", br, "type", "bridge"])?;
            ip(&["-n", &hub, "link", "set", br, "up"])?;
        }
        for (i, ns) in self.replicas.clone().iter().enumerate() {
            let id = i + 1;
            ip(&["netns", "add", ns])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            for (kind, br, addr) in [
                ("p", "brp", self.peer_ip(id as u64)),
                ("c", "brc", self.client_ip(id as u64)),
            ] {
                let hub_end = format!("{kind}r{id}");
                let inner = format!("eth{kind}");
                ip(&[
                    "-n", &hub, "link", "add", &hub_end, "type", "veth", "peer", "name", &inner,
                    "netns", ns,
                ])?;
                ip(&["-n", &hub, "link", "set", &hub_end, "master", br])?;
                ip(&["-n", &hub, "link", "set", &hub_end, "up"])?;
                ip(&[
                    "-n",
                    ns,
                    "addr",
                    "add",
                    &format!("{addr}/24"),
                    "dev",
                    &inner,
                ])?;
                ip(&["-n", ns, "link", "set", &inner, "up"])?;
            }
        }
        // The test process's way in: root end with .254 on the client subnet.
        let root = self.root_link.clone();
        ip(&[
            "link", "add", &root, "type", "veth", "peer", "name", "cl", "netns", &hub,
        ])?;
        ip(&["-n", &hub, "link", "set", "cl", "master", "brc"])?;
        ip(&["-n", &hub, "link", "set", "cl", "up"])?;
        ip(&[
            "addr",
            "add",
            &format!("10.202.{}.254/24", self.subnet),
            "dev",
            &root,
        ])?;
        ip(&["link", "set", &root, "up"])?;
        Ok(())
    }

    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// Replica `id`'s address on the peer network (what the other replicas dial).
    pub fn peer_ip(&self, id: u64) -> String {
        format!("10.201.{}.{id}", self.subnet)
    }

    /// Replica `id`'s address on the client network (what the test dials).
    pub fn client_ip(&self, id: u64) -> String {
        format!("10.202.{}.{id}", self.subnet)
    }

    /// A command that runs `program` inside replica `id`'s namespace. `ip netns exec`
    /// execs the program after entering the namespace, so the child's pid is the
    /// program's own and signals reach it directly.
    pub fn exec_in(&self, id: u64, program: &std::path::Path) -> Command {
        let mut cmd = Command::new(IP);
        cmd.args(["netns", "exec", &self.replicas[id as usize - 1]])
            .arg(program);
        cmd
    }

    /// Cuts replica `id` off from every other replica (clients still reach it).
    pub fn isolate(&self, id: u64) -> Result<(), NetError> {
        ip(&["-n", &self.hub, "link", "set", &format!("pr{id}"), "down"])
    }

    /// Undoes [`isolate`](Self::isolate).
    pub fn heal(&self, id: u64) -> Result<(), NetError> {
        ip(&["-n", &self.hub, "link", "set", &format!("pr{id}"), "up"])
    }
}

impl Drop for Net {
    /// Deleting a namespace deletes the veth ends inside it, and with them their peers
    /// (including the root-side link).
    fn drop(&mut self) {
        for ns in &self.replicas {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["netns", "del", &self.hub]);
        let _ = ip(&["link", "del", &self.root_link]);
    }
}
