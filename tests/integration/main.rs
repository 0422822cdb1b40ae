//! strain's integration tests: the real binary against real servers on loopback.

mod harness;
mod proxies;

mod cli;
mod compare;
mod connections;
mod counts;
mod errors;
mod exit_codes;
mod faults_conn;
mod faults_framing;
mod faults_origin;
mod find_max;
mod find_max_report;
mod html;
mod http2;
mod k8s;
mod library;
mod merge;
mod metrics;
mod origin;
mod origin_h2;
mod origin_service;
mod progress;
mod proxy;
mod rate;
mod report;
mod requests;
mod script;
mod segments;
mod series;
mod signals;
mod thresholds;
mod tls;
mod wrk_scripts;
