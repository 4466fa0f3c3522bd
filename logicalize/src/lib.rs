//! Logicalization (seed 001 §2): communication matrix → topology identification → logical trace.
//!
//! Not implemented yet. This crate will take a [`TraceSet`](../mpiskel_trace/struct.TraceSet.html)
//! and hand out the application's topology, the rank → coordinate map, and a logical trace per
//! process class in which every peer is a direction of the topology.
#![deny(missing_docs)]
