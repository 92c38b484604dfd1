//! The one reader of what a replica moved out of memory into `state.redb`: retired
//! motions (`motion_store`), retired deduplication replies (`reply_store`) and the Merkle
//! tree's paged-out leaves (`record_store`). Each of those modules implements the pure
//! crate's reader trait for it.

use std::sync::{Arc, Mutex, PoisonError};

use redb::Database;

use super::log_store::StoreError;

/// The archive a replica's state reads retired motions, replies and leaves through. A
/// failed read answers as if nothing were archived and is kept ([`Self::take_failure`]):
/// the state machine checks after every apply and stops the replica rather than count an
/// apply that read wrongly.
#[derive(Debug)]
pub(crate) struct RedbArchive {
    db: Arc<Database>,
    failure: Mutex<Option<StoreError>>,
}

impl RedbArchive {
    pub(crate) fn new(db: Arc<Database>) -> Arc<Self> {
        Arc::new(Self {
            db,
            failure: Mutex::new(None),
        })
    }

    /// The first read that failed since the last call.
    pub(crate) fn take_failure(&self) -> Option<StoreError> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// The database the readers open their transactions on.
    pub(super) fn db(&self) -> &Database {
        &self.db
    }

    /// `r`'s value, or the default with the failure kept for [`Self::take_failure`].
    pub(super) fn or_note<T: Default>(&self, r: Result<T, StoreError>) -> T {
        r.unwrap_or_else(|e| {
            tracing::error!("reading retired motions or replies: {e}");
            self.failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert(e);
            T::default()
        })
    }
}
