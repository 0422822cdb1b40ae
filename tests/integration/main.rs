//! strain's integration tests: the real binary against real servers on loopback.

mod harness;
mod proxies;

mod cli;
mod counts;
mod errors;
mod faults_framing;
mod origin;
mod proxy;
mod rate;
mod report;
mod script;
mod tls;
