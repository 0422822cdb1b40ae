//! stub (being written)
use std::sync::atomic::AtomicBool;
#[derive(Debug, Clone)]
pub struct OriginConfig { pub body_size: usize, pub threads: usize, pub status: u16 }
impl Default for OriginConfig { fn default() -> Self { OriginConfig { body_size: 13, threads: 1, status: 200 } } }
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct OriginStats { pub connections: u64, pub requests: u64, pub bytes_read: u64, pub bytes_written: u64 }
#[derive(Debug, thiserror::Error)] pub enum OriginError { #[error("x")] X }
pub fn run(_l: std::net::TcpListener, _c: &OriginConfig, _s: &AtomicBool) -> Result<OriginStats, OriginError> { Ok(OriginStats::default()) }
