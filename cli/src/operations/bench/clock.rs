//! The wall clock the bench compares with the leader's stamped batch times: both are Unix
//! milliseconds on the same machine.

/// Now, in Unix milliseconds (0 before 1970, which no run sees).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
