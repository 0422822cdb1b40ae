//! strain: an HTTP load generator.
//!
//! A tour, from the command line inwards:
//! - [`cli`] turns raw, wrk-compatible flags (each defined once, in groups) into a
//!   [`run::RunConfig`] and the [`report::Outputs`] the caller wants; nothing below it sees the
//!   flag parser. [`config`] is the load alone; [`defaults`] names every default.
//! - [`run::run`] runs one test of any kind and returns a typed result with its [`verdict`]s
//!   (thresholds judged, `--abort-on-fail`); [`find_max`] loops over it for `strain find-max`.
//! - [`engine`] settles the plan before any load (address, protocol by ALPN, TLS, requests;
//!   pacing from [`schedule`], scripts from [`script`], proxy workloads from [`workload`]), runs one
//!   event loop per thread, generic over one transport per protocol (HTTP/1.1, HTTP/2, HTTP/3
//!   over QUIC, WebSocket), and returns each thread's [`stats::Recorder`]; [`net`] gives it sockets (TCP,
//!   TLS, Unix) and tells whether the server shares strain's CPUs, [`http`] and [`h2`] the wire
//!   (HTTP/3's framing is the engine's own, on quiche's QUIC).
//! - [`stats`] merges the recorders into a [`stats::Summary`], which [`report`] renders as wrk's
//!   text, JSON, HTML, live lines and a search's table.
//! - [`result`] is the result JSON as a type ([`result::RunDoc`], and a search's document),
//!   written by [`report`] and read back typed by [`compare`], [`merge`] and the HTML pages.
//! - [`origin`] is the built-in origin server (the demo target and the tests' server).
//! - [`compare`] judges two sides' runs against each other, saved or run by its A/B runner
//!   (`strain compare`).
//! - [`merge`] adds the results of one test's segments into one result (`strain merge`).
//! - [`metrics`] exports a test's progress to Prometheus while it runs (`--metrics-listen`,
//!   `--metrics-push`), fed from the interval rows the observer already sees.
//! - [`replay`] reads recorded traffic and feeds it to the engine at its recorded pace
//!   (`strain replay`); [`grpc`] is gRPC over the HTTP/2 engine (`strain grpc`): schemas, messages, framing and statuses.
//! - [`proto`] holds the protocols that are units of their own, a folder each ([`proto::ws`]:
//!   WebSocket's wire, client transport and counts), and the one list of them.
//! - [`rng`] and [`b64`] are small leaves shared by the rest.

pub mod b64;
pub mod cli;
pub mod compare;
pub mod config;
pub mod defaults;
pub mod engine;
pub mod find_max;
pub mod grpc;
pub mod h2;
pub mod http;
pub mod ids;
pub mod merge;
pub mod metrics;
pub mod net;
pub mod origin;
pub mod proto;
pub mod replay;
pub mod report;
pub mod result;
pub mod rng;
pub mod run;
pub mod schedule;
pub mod script;
pub mod stats;
pub mod verdict;
pub mod workload;
