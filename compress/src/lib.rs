//! Loop-nest discovery (seed 001 §3): a logical trace as a symbol sequence → a loop nest.
//!
//! Not implemented yet. This crate will know nothing about MPI: it takes sequences of symbols
//! and hands out loop-nest programs whose expansion gives the sequence back.
#![deny(missing_docs)]
