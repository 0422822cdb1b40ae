//! What the origin counts of its gRPC service: calls by method, the status each call ended
//! with (by canonical name), messages each way, and requests that were not gRPC calls. One
//! writer per thread ([`GrpcCounters`], beside the thread's other counters), summed into
//! [`GrpcStats`] for `/_strain/stats`, the in-process reader and the exit line.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::super::counter::Counter;
use crate::grpc::status::Code;

crate::stats::named::named! {
    /// What a call asked for, as the origin counts it.
    pub enum Method {
        /// `strain.echo.v1.Echo/Unary`.
        Unary,
        /// `strain.echo.v1.Echo/ServerStream`.
        ServerStream,
        /// `strain.echo.v1.Echo/ClientStream`.
        ClientStream,
        /// `strain.echo.v1.Echo/Bidi`.
        Bidi,
        /// Server reflection, v1 or v1alpha (when served).
        Reflection,
        /// Any other path (and reflection with `--no-reflection`): answered UNIMPLEMENTED.
        Unknown,
    }
}

/// One thread's gRPC counters.
#[derive(Debug, Default)]
pub(in crate::origin) struct GrpcCounters {
    /// Calls begun, by [`Method`].
    pub(in crate::origin) calls: [Counter; Method::COUNT],
    /// Calls ended, by the status they ended with (a call the client reset: CANCELLED).
    pub(in crate::origin) statuses: [Counter; Code::COUNT],
    /// Request messages received whole.
    pub(in crate::origin) received: Counter,
    /// Reply messages sent.
    pub(in crate::origin) sent: Counter,
    /// Requests that were not gRPC calls (another content type: 415; another method: 405).
    pub(in crate::origin) refused: Counter,
}

impl GrpcCounters {
    /// This thread's totals.
    pub(in crate::origin) fn snapshot(&self) -> GrpcStats {
        GrpcStats {
            calls: ByMethod(self.calls.each_ref().map(Counter::get)),
            statuses: ByStatus(self.statuses.each_ref().map(Counter::get)),
            messages_received: self.received.get(),
            messages_sent: self.sent.get(),
            refused: self.refused.get(),
        }
    }
}

/// The origin's gRPC counts, summed over its threads (see [`super::super::OriginStats::grpc`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct GrpcStats {
    /// Calls begun, by method: `{"unary": 10, "server_stream": 1, ...}`.
    pub calls: ByMethod,
    /// Calls ended, by status: `{"OK": 9, "NOT_FOUND": 1, ...}`, every code named; a call the
    /// client reset counts as `CANCELLED`. Once every call has ended, these sum to `calls`'.
    pub statuses: ByStatus,
    /// Request messages received whole (reflection's questions too).
    pub messages_received: u64,
    /// Reply messages sent (reflection's answers too).
    pub messages_sent: u64,
    /// Requests that were not gRPC calls (another content type: 415; another method: 405).
    pub refused: u64,
}

impl GrpcStats {
    /// Adds `other`'s counts.
    pub(in crate::origin) fn merge(&mut self, other: &GrpcStats) {
        for (a, b) in self.calls.0.iter_mut().zip(other.calls.0) {
            *a += b;
        }
        for (a, b) in self.statuses.0.iter_mut().zip(other.statuses.0) {
            *a += b;
        }
        self.messages_received += other.messages_received;
        self.messages_sent += other.messages_sent;
        self.refused += other.refused;
    }
}

/// A count per [`Method`], serialized as a map by the method's name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ByMethod(pub [u64; Method::COUNT]);

impl ByMethod {
    /// The count of `method`.
    pub fn get(&self, method: Method) -> u64 {
        self.0[method as usize]
    }
}

/// A count per gRPC status [`Code`], serialized as a map by the code's canonical name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ByStatus(pub [u64; Code::COUNT]);

impl ByStatus {
    /// The count of `code`.
    pub fn get(&self, code: Code) -> u64 {
        self.0[code as usize]
    }
}

impl Serialize for ByMethod {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(Method::COUNT))?;
        for m in Method::ALL {
            map.serialize_entry(m.name(), &self.get(m))?;
        }
        map.end()
    }
}

impl Serialize for ByStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(Code::COUNT))?;
        for c in Code::ALL {
            map.serialize_entry(&c.canonical(), &self.get(c))?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_serialize_by_name() {
        let counters = GrpcCounters::default();
        counters.calls[Method::ServerStream as usize].add(2);
        counters.statuses[Code::NotFound as usize].add(1);
        counters.statuses[Code::Ok as usize].add(1);
        counters.sent.add(20);
        let mut stats = counters.snapshot();
        stats.merge(&counters.snapshot());
        let json = serde_json::to_value(stats).unwrap();
        assert_eq!(json["calls"]["server_stream"], 4);
        assert_eq!(json["calls"]["unary"], 0);
        assert_eq!(json["statuses"]["NOT_FOUND"], 2);
        assert_eq!(json["statuses"]["OK"], 2);
        assert_eq!(json["statuses"].as_object().unwrap().len(), 17);
        assert_eq!(json["messages_sent"], 40);
        assert_eq!(stats.calls.get(Method::ServerStream), 4);
    }
}
