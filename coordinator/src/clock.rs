//! The replica's wall clock: the leader stamps batches (`Batch.time_ms`) and signs motion
//! deadlines with it, and apply judges windows, rate limits and the deduplication lease by
//! those stamps. It is the one clock in the design that one replica reads for everyone.
//!
//! In a build with the `test-commands` feature, a replica started with `--test-commands`
//! adds an offset read from `DATA_DIR/test-clock-offset-ms` (polled every 100 ms), so the
//! nemesis can make one replica's clock jump forward or back without touching the host's
//! clock, which other processes share. Production builds have no offset at all.

use std::time::{SystemTime, UNIX_EPOCH};

#[cfg(feature = "test-commands")]
static OFFSET_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Milliseconds since the Unix epoch, as this replica sees them.
pub fn now_ms() -> u64 {
    let real = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    #[cfg(feature = "test-commands")]
    {
        let off = OFFSET_MS.load(std::sync::atomic::Ordering::Relaxed);
        real.saturating_add_signed(off)
    }
    #[cfg(not(feature = "test-commands"))]
    real
}

/// Follows `DATA_DIR/test-clock-offset-ms` (a signed number of milliseconds; absent or
/// unreadable means 0). Test clusters only.
#[cfg(feature = "test-commands")]
pub(crate) fn follow_offset_file(data_dir: &std::path::Path) {
    let path = data_dir.join("test-clock-offset-ms");
    tokio::spawn(async move {
        loop {
            let off = std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .unwrap_or(0);
            OFFSET_MS.store(off, std::sync::atomic::Ordering::Relaxed);
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
}

/// [`now_ms`] as the round's injected clock (`panel_proto::round::Clock`): what the
/// motion and exam drivers read.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplicaClock;

impl panel_proto::round::Clock for ReplicaClock {
    fn now_ms(&self) -> i64 {
        i64::try_from(now_ms()).unwrap_or(i64::MAX)
    }
}
