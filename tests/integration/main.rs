//! strain's integration tests: the real binary against real servers on loopback.

mod harness;

mod cli;
mod counts;
mod errors;
mod rate;
mod report;
mod script;
mod tls;
