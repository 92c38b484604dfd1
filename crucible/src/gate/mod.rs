//! The Gate: deterministic admission rules G1 to G14 (SPEC section 8).
