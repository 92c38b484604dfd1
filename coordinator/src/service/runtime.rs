//! The async runtime a replica runs on.
//!
//! Tokio's blocking pool grows to 512 threads by default. A leader sent every incoming
//! outcome's signature checks there at once (`replica.rs`, intake), so under load it ran
//! about three times the threads of a follower, and glibc gave most of them an arena of
//! their own: each arena keeps its high-water mark, and the leader's resident memory grew
//! about 20 MiB a minute faster than a follower's at 100 decisions/s with no more live
//! data (BENCHMARKS.md, "Soak"). Intake now runs at most one check per core at a time, and
//! the pool is bounded here as a backstop: what runs there is those checks and redb
//! commits that run one at a time each (a log append, a record batch, a snapshot).

/// Threads in the blocking pool: a checking thread per core of a large machine and the
/// commits, with room to spare.
pub const BLOCKING_THREADS: usize = 8;

/// A multi-threaded runtime with the blocking pool bounded to [`BLOCKING_THREADS`].
pub fn replica_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build()
}
