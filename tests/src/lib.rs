//! Cross-process tests live in `tests/tests/`; this library is empty on purpose.
