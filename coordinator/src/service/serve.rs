//! One coordinator replica as a process: storage, Raft, proposer, drivers, and one gRPC
//! endpoint serving the replica transport, the client APIs, membership admin, health and
//! reflection.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;

use crate::pb::coordinator::admin_server::AdminServer;
use crate::pb::coordinator::coordinator_server::CoordinatorServer;
use crate::pb::replica::replica_server::ReplicaServer;
use crate::raft::{self, NodeId, RaftOptions, RaftStartError};
use crate::service::admin::AdminService;
use crate::service::client_api::CoordinatorService;
use crate::service::intake::{Intake, IntakeLimits};
use crate::service::proposer::{Proposer, ProposerOptions};
use crate::service::replica::{MAX_MESSAGE, Replica, test_commands_built};

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub id: NodeId,
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub raft: RaftOptions,
    pub proposer: ProposerOptions,
    /// Commit and reveal windows of the motion driver.
    pub driver: crate::service::driver::DriverOptions,
    /// Accept [`TestCommand`]s from clients (`--test-commands`; needs the `test-commands`
    /// build feature). Off in production: they bypass the exam and let a client close a
    /// motion.
    pub test_commands: bool,
    /// Largest client command in bytes (`--max-command-bytes`, default
    /// [`DEFAULT_MAX_COMMAND_BYTES`]); larger writes are refused at intake with the limit
    /// named.
    pub max_command_bytes: usize,
    /// The cluster's motion key file (`--motion-key`, the same on every replica); required
    /// unless `test_commands` (see [`crate::service::motion_key::resolve`]).
    pub motion_key: Option<PathBuf>,
}

/// Default cap on one client command: 1 MiB of JSON, far above any contribution the Gate
/// accepts and far below what one `AppendEntries` can carry within its timeout.
pub const DEFAULT_MAX_COMMAND_BYTES: usize = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Start(#[from] RaftStartError),
    #[error("cannot listen on {addr}: {source}; pick a free port")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error(
        "--test-commands needs a build with the test-commands feature (cargo build --features panel-coordinator/test-commands); production replicas never accept test commands"
    )]
    TestCommandsUnavailable,
    #[error("gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error(transparent)]
    MotionKey(#[from] crate::service::motion_key::MotionKeyError),
}

/// Run a replica until `shutdown` resolves.
/// Loads or creates the replica's checkpoint key (32 random bytes, mode 0600).
fn checkpoint_key(dir: &std::path::Path) -> Result<ed25519_dalek::SigningKey, ServeError> {
    let path = dir.join("checkpoint.key");
    let io = |e: std::io::Error| ServeError::DataDir {
        path: path.display().to_string(),
        source: e,
    };
    if let Ok(bytes) = std::fs::read(&path)
        && let Ok(seed) = <[u8; 32]>::try_from(bytes.as_slice())
    {
        return Ok(ed25519_dalek::SigningKey::from_bytes(&seed));
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| io(std::io::Error::other(e.to_string())))?;
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        f.write_all(&seed).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    Ok(ed25519_dalek::SigningKey::from_bytes(&seed))
}

pub async fn serve(
    opts: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    if opts.test_commands && !test_commands_built() {
        return Err(ServeError::TestCommandsUnavailable);
    }
    if opts.test_commands {
        tracing::warn!("test commands are on: clients may admit arbiters and close motions");
    }
    std::fs::create_dir_all(&opts.data_dir).map_err(|e| ServeError::DataDir {
        path: opts.data_dir.display().to_string(),
        source: e,
    })?;
    let motion_key = Arc::new(crate::service::motion_key::resolve(
        opts.motion_key.as_deref(),
        &opts.data_dir,
        opts.test_commands,
    )?);
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| ServeError::Bind {
            addr: opts.listen,
            source: e,
        })?;
    let (raft, sm) = raft::start(opts.id, &opts.data_dir, &opts.raft).await?;
    let proposer = Proposer::spawn(raft.clone(), opts.proposer.clone());
    let links = crate::service::link::LinkRegistry::new();
    crate::service::driver::spawn(
        opts.id,
        raft.clone(),
        sm.clone(),
        proposer.clone(),
        opts.driver,
        links.clone(),
        motion_key,
    );
    let checkpoint_key = checkpoint_key(&opts.data_dir)?;
    let replica = Arc::new(Replica {
        id: opts.id,
        raft: raft.clone(),
        checkpoint_key,
        intake: Intake::new(IntakeLimits::default()),
        sm,
        proposer,
        peers: Mutex::new(HashMap::new()),
        test_commands: opts.test_commands,
        max_command_bytes: opts.max_command_bytes,
    });

    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_serving::<CoordinatorServer<CoordinatorService>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::pb::DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(panel_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;

    let result = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(
            ReplicaServer::new(raft::ReplicaService::new(raft.clone()))
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE),
        )
        .add_service(
            CoordinatorServer::new(CoordinatorService(replica.clone()))
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE),
        )
        .add_service(
            crate::pb::coordinator::debates_server::DebatesServer::new(
                crate::service::debates_api::DebatesService(replica.clone()),
            )
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE),
        )
        .add_service(AdminServer::new(AdminService(replica.clone())))
        .add_service(crate::service::link::server(
            opts.id,
            replica.sm.clone(),
            links,
        ))
        .add_service(health)
        .add_service(reflection)
        // `Server::tcp_nodelay` applies only to listeners tonic binds itself: set it on
        // every accepted stream, or Nagle + delayed ACK stall each small reply.
        .serve_with_incoming_shutdown(
            TcpListenerStream::new(listener).map(|conn| {
                if let Ok(stream) = &conn {
                    let _ = stream.set_nodelay(true);
                }
                conn
            }),
            shutdown,
        )
        .await;
    let _ = raft.shutdown().await;
    Ok(result?)
}
