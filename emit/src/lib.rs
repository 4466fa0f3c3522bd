//! Skeleton construction (seed 001 §4): matching, deadlock check, scaling and code generation.
//!
//! Not implemented yet. This crate will take a loop nest over logical operations and hand out a
//! checked skeleton program and its C or Rust sources; it never reads trace files.
#![deny(missing_docs)]
