//! One coordinator replica as a process: storage, Raft, proposer, drivers, and one gRPC
//! endpoint serving the replica transport, the client APIs, membership admin, health and
//! reflection.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use panel_transport::{ClientAuth, Role, RoleGuard, Transport, TransportError};
use tonic::service::interceptor::InterceptedService;

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
    /// Mutual TLS with this replica's certificate and the federation charter, or the
    /// loopback debug mode (docs/SECURITY.md, "Transport").
    pub transport: Transport,
    /// Where the `Admin` service listens (`--admin-listen`); on the main listener when
    /// unset. Either way, under TLS only the charter's operators may call it.
    pub admin_listen: Option<SocketAddr>,
    /// The cluster's motion key file (`--motion-key`, the same on every replica); required
    /// unless `test_commands` (see [`crate::service::motion_key::resolve`]).
    pub motion_key: Option<PathBuf>,
    /// A second motion key this replica holds for a rotation (`--next-motion-key`): the
    /// driver signs each motion with whichever held key is in force for it
    /// (docs/coordinator/state-machine.md "Rotating the motion key").
    pub next_motion_key: Option<PathBuf>,
    /// Write limits: the leader's intake buckets and the quotas apply enforces per
    /// identity and organisation (docs/SECURITY.md, "Floods"; flags in docs/COORDINATOR.md).
    pub intake: IntakeLimits,
    /// The record log's key file (`--log-key`; `service::log_key`).
    pub log_key: Option<PathBuf>,
    /// Submission prefixes of the witnesses checkpoints are pushed to (`--witness URL`).
    pub witnesses: Vec<String>,
    /// When apply issues checkpoints (`--checkpoint-every-entries`, `--checkpoint-every-ms`).
    pub checkpoints: panel_machine::features::checkpoints::Cadence,
    /// Where the plain-HTTP metrics endpoint listens (`--metrics-addr`: `/metrics`,
    /// `/livez`, `/readyz`); off when unset (docs/coordinator/operations.md, "Metrics and readiness").
    pub metrics_addr: Option<SocketAddr>,
    /// Start a new group of one from a backup (`--restore`) in an empty data directory.
    pub restore: Option<Restore>,
}

/// `--restore FILE [--member-addr HOST:PORT]` (docs/coordinator/storage.md, "Backup, restore and a
/// lost quorum").
#[derive(Debug, Clone)]
pub struct Restore {
    pub file: PathBuf,
    /// The address other replicas reach this one at, recorded in the new group's
    /// membership; `--listen` when unset.
    pub member_addr: Option<String>,
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
    Security(#[from] TransportError),
    #[error(
        "this replica's certificate is not replica {id}'s in the federation charter; use the identity folder issued for replica {id}, or list its certificate in the charter"
    )]
    NotCharterReplica { id: NodeId },
    #[error(transparent)]
    MotionKey(#[from] crate::service::motion_key::MotionKeyError),
    #[error(transparent)]
    LogKey(#[from] crate::service::log_key::LogKeyError),
    #[error(transparent)]
    Restore(#[from] crate::raft::restore::RestoreError),
    #[error(transparent)]
    Metrics(#[from] panel_ops::OpsError),
    /// openraft stops a replica whose storage fails (a log append, vote, snapshot or purge
    /// that does not commit); the process then exits with this error instead of serving
    /// on without a disk (docs/coordinator/storage.md, "Disk faults and recovery").
    #[error(
        "replica {id} stopped: its storage under {data_dir} failed: {cause}. Nothing it \
         acknowledged is lost (an entry counts only once it is fsynced). Free space or fix the \
         disk and restart it on the same data directory; if it then refuses a file as \
         damaged, re-join it from its peers (docs/coordinator/storage.md, \"Disk faults and recovery\")"
    )]
    StorageFailed {
        id: NodeId,
        data_dir: String,
        cause: String,
    },
    /// The Raft core ended on something other than storage (a panic): exit rather than
    /// answer every call with `Fatal`.
    #[error("replica {id} stopped: {cause}; restart it on the same data directory")]
    RaftStopped { id: NodeId, cause: String },
}

/// How long in-flight requests get to finish after a storage failure before the process
/// exits anyway: long-lived streams (links, `WriteStream`, `WatchEvents`) would otherwise
/// hold a graceful shutdown open for ever.
const STORAGE_FAILURE_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Refuses a replica whose transport cannot hold its role: plaintext off loopback, TLS
/// without an identity or a charter, or a certificate the charter does not list as this
/// replica's.
fn check_transport(opts: &ServeOptions) -> Result<(), ServeError> {
    let t = &opts.transport;
    t.check_listen(opts.listen)?;
    if let Some(a) = opts.admin_listen {
        t.check_listen(a)?;
    }
    t.require_server("a coordinator replica")?;
    if let (Transport::Tls { material, .. }, Some(charter)) = (t, t.charter()) {
        let listed = material
            .fingerprint()
            .and_then(|fp| charter.replica(&fp).map(|r| r.id));
        if listed != Some(opts.id) {
            return Err(ServeError::NotCharterReplica { id: opts.id });
        }
    }
    Ok(())
}

/// Lays out the empty data directory from the backup (`raft::restore`), timing it for the
/// operator's log.
fn restore(opts: &ServeOptions, r: &Restore) -> Result<(), ServeError> {
    let started = std::time::Instant::now();
    let (header, state) = raft::restore::read_backup(&r.file)?;
    let addr = r
        .member_addr
        .clone()
        .unwrap_or_else(|| opts.listen.to_string());
    raft::restore::seed(&opts.data_dir, opts.id, &addr, &header, &state)?;
    tracing::info!(
        "restored {} ({} state bytes, {} record entries, up to log index {} of term {}) into {} as replica {} at {addr}, a group of one, in {} ms",
        r.file.display(),
        header.state_bytes,
        header.record_entries,
        header.last_log_id.index,
        header.last_log_id.leader_id.term,
        opts.data_dir.display(),
        opts.id,
        started.elapsed().as_millis()
    );
    Ok(())
}

/// Run a replica until `shutdown` resolves.
pub async fn serve(
    opts: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    if opts.test_commands && !test_commands_built() {
        return Err(ServeError::TestCommandsUnavailable);
    }
    if opts.test_commands {
        tracing::warn!("test commands are on: clients may admit arbiters and close motions");
        #[cfg(feature = "test-commands")]
        crate::clock::follow_offset_file(&opts.data_dir);
    }
    check_transport(&opts)?;
    // Before anything writes into the data directory (keys of test clusters live there).
    if let Some(r) = &opts.restore {
        restore(&opts, r)?;
    }
    std::fs::create_dir_all(&opts.data_dir).map_err(|e| ServeError::DataDir {
        path: opts.data_dir.display().to_string(),
        source: e,
    })?;
    let motion_keys = Arc::new(crate::service::motion_key::MotionKeys::resolve(
        opts.motion_key.as_deref(),
        opts.next_motion_key.as_deref(),
        &opts.data_dir,
        opts.test_commands,
    )?);
    // A key that is neither the charter's nor held for a rotation is a misconfiguration;
    // after a rotation the record, not the charter, names the key in force, so a replica
    // holding only a rotated key starts and the driver checks each motion's key.
    if let Some(charter) = opts.transport.charter()
        && !motion_keys.holds_hex(&charter.motion_key)
    {
        tracing::warn!(
            charter = %charter.motion_key,
            "no motion key this replica holds is the charter's: it signs motions only once a \
             rotation on the record names one of its keys (docs/coordinator/state-machine.md \"Rotating the \
             motion key\")"
        );
    }
    let log_key = crate::service::log_key::resolve(
        opts.log_key.as_deref(),
        &opts.data_dir,
        opts.transport.charter().as_deref(),
        opts.id,
    )?;
    let beacon = crate::service::log_key::beacon(
        opts.log_key.as_deref(),
        opts.transport.charter().as_deref(),
        opts.id,
    )?
    .map(Arc::new);
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| ServeError::Bind {
            addr: opts.listen,
            source: e,
        })?;
    let admin_listener = match opts.admin_listen {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| ServeError::Bind { addr, source: e })?,
        ),
        None => None,
    };
    let metrics_endpoint = match opts.metrics_addr {
        Some(addr) => Some(panel_ops::Endpoint::bind(addr, "--metrics-addr").await?),
        None => None,
    };
    let metrics = Arc::new(crate::service::metrics::ReplicaMetrics::new());
    let (raft, sm, committed) =
        raft::start(opts.id, &opts.data_dir, &opts.raft, opts.transport.clone()).await?;
    metrics.follow_applied(&sm);
    let proposer = Proposer::spawn(
        raft.clone(),
        ProposerOptions {
            limits: Some(opts.intake.stamped_policy()),
            checkpoints: Some(opts.checkpoints),
            ..opts.proposer.clone()
        },
    );
    if let Some(charter) = opts.transport.charter() {
        crate::service::charter_adoption::spawn(
            opts.id,
            raft.clone(),
            sm.clone(),
            proposer.clone(),
            charter,
        );
    }
    let links = crate::service::link::LinkRegistry::new();
    let exam_pools = opts.driver.exam_pools.clone();
    let vouch = crate::service::driver::spawn(
        opts.id,
        raft.clone(),
        sm.clone(),
        proposer.clone(),
        crate::service::driver::DriverOptions {
            beacon: beacon.clone(),
            seal_key: Some(log_key.clone()),
            ..opts.driver
        },
        links.clone(),
        opts.transport.clone(),
        motion_keys,
        Arc::new(crate::clock::ReplicaClock),
    );
    crate::service::witnessing::spawn(
        crate::service::witnessing::Witnessing {
            id: opts.id,
            raft: raft.clone(),
            sm: sm.clone(),
            proposer: proposer.clone(),
            log_key: log_key.clone(),
            cadence: opts.checkpoints,
            metrics: metrics.clone(),
            replicas: crate::raft::network::PinnedClients::new(opts.transport.clone()),
        },
        opts.witnesses.clone(),
    );
    let replica = Arc::new(Replica {
        id: opts.id,
        raft: raft.clone(),
        log_key,
        intake: Intake::new(opts.intake),
        identities: crate::service::replica::Identities::new(&opts.transport),
        sm,
        proposer,
        peers: Mutex::new(HashMap::new()),
        test_commands: opts.test_commands,
        max_command_bytes: opts.max_command_bytes,
        transport: opts.transport.clone(),
        quorum: raft::QuorumWatch::spawn(
            &raft,
            opts.transport.clone(),
            std::time::Duration::from_millis(opts.raft.heartbeat_ms.max(20) * 2),
        ),
        lease: std::time::Duration::from_millis(
            opts.raft.election_max_ms + 2 * opts.raft.heartbeat_ms,
        ),
        metrics: metrics.clone(),
        intake_checks: tokio::sync::Semaphore::new(
            std::thread::available_parallelism().map_or(2, |n| n.get()),
        ),
    });

    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_serving::<CoordinatorServer<CoordinatorService>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::pb::REPLICA_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(panel_proto::COORDINATOR_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(panel_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;

    let charter = opts.transport.charter();
    let replica_guard = RoleGuard::new(charter.clone(), Role::Replica, "Replica");
    let admin = InterceptedService::new(
        AdminServer::new(AdminService(replica.clone())),
        RoleGuard::new(charter, Role::Operator, "Admin"),
    );
    let (admin_here, admin_apart) = match admin_listener {
        Some(l) => (None, Some((l, admin))),
        None => (Some(admin), None),
    };
    // A storage failure stops the servers as a signal would, and is then the result.
    let (failed_tx, failed_rx) = tokio::sync::watch::channel(None::<String>);
    {
        let raft = raft.clone();
        let id = opts.id;
        tokio::spawn(async move {
            let cause = raft::failure(raft).await;
            tracing::error!("replica {id}: raft stopped: {cause}");
            let _ = failed_tx.send(Some(cause));
        });
    }
    let failure = {
        let mut rx = failed_rx.clone();
        async move {
            if rx.wait_for(Option::is_some).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    };
    let shutdown = futures::FutureExt::shared(Box::pin(async move {
        tokio::select! {
            () = shutdown => {}
            () = failure => {}
        }
    }));
    if let Some(endpoint) = metrics_endpoint {
        let probe = Arc::new(crate::service::metrics::ReplicaProbe {
            replica: replica.clone(),
            metrics,
            committed,
        });
        tokio::spawn(endpoint.run(probe, shutdown.clone()));
    }
    if let Some((listener, admin)) = admin_apart {
        let server = opts
            .transport
            .server()
            .add_service(admin)
            .serve_with_incoming_shutdown(
                opts.transport.incoming(listener, ClientAuth::Required)?,
                shutdown.clone(),
            );
        tokio::spawn(async move {
            if let Err(e) = server.await {
                tracing::error!("admin listener failed: {e}");
            }
        });
    }
    let incoming = opts.transport.incoming(listener, ClientAuth::Optional)?;
    let result = opts
        .transport
        .server()
        .add_service(InterceptedService::new(
            ReplicaServer::new(
                raft::ReplicaService::new(
                    raft.clone(),
                    replica.sm.clone(),
                    replica.log_key.clone(),
                    beacon,
                    Some(vouch),
                )
                .with_exam_pools(exam_pools),
            )
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE),
            replica_guard,
        ))
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
        .add_service(crate::pb::coordinator::log_server::LogServer::new(
            crate::service::log_api::LogService(replica.clone()),
        ))
        .add_optional_service(admin_here)
        .add_service(crate::service::link::server(
            opts.id,
            replica.sm.clone(),
            links,
        ))
        .add_service(health)
        .add_service(reflection)
        .serve_with_incoming_shutdown(incoming, shutdown);
    let grace = {
        let mut rx = failed_rx.clone();
        async move {
            if rx.wait_for(Option::is_some).await.is_err() {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(STORAGE_FAILURE_GRACE).await;
        }
    };
    let result = tokio::select! {
        r = result => Some(r),
        () = grace => None,
    };
    let _ = raft.shutdown().await;
    if let Some(cause) = failed_rx.borrow().clone() {
        if !cause.starts_with(raft::STORAGE_FAILURE) {
            return Err(ServeError::RaftStopped { id: opts.id, cause });
        }
        raft::note_storage_failure(&opts.data_dir, &cause);
        return Err(ServeError::StorageFailed {
            id: opts.id,
            data_dir: opts.data_dir.display().to_string(),
            cause,
        });
    }
    let served = match result {
        Some(r) => r,
        None => Ok(()),
    };
    if served.is_ok() {
        raft::mark_clean_stop(&opts.data_dir);
    }
    Ok(served?)
}
