//! Scoring rules and statistics for arbiter calibration. Pure: no I/O.
