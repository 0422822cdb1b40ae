//! What the origin counts of its gRPC service: calls by method, the status each call ended
//! with (by canonical name), messages each way, and requests that were not gRPC calls. They are
//! the unit's counters of the origin ([`crate::origin::unit`]), named so that the stats answer
//! writes them nested: `{"grpc": {"calls": {"unary": 10, ...}, "statuses": {"OK": 9, ...},
//! "messages_received": 1, "messages_sent": 2, "refused": 0}}`, every method and code named.

use std::sync::LazyLock;

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

/// The counter of calls to `method`.
pub(super) fn calls(method: Method) -> usize {
    method as usize
}

/// The counter of calls that ended with `code` (a call the client reset: CANCELLED).
pub(super) fn status(code: Code) -> usize {
    Method::COUNT + code as usize
}

/// Request messages received whole (reflection's questions too).
pub(super) const RECEIVED: usize = Method::COUNT + Code::COUNT;
/// Reply messages sent (reflection's answers too).
pub(super) const SENT: usize = RECEIVED + 1;
/// Requests that were not gRPC calls (another content type: 415; another method: 405).
pub(super) const REFUSED: usize = RECEIVED + 2;

/// The counters' names, in their order.
pub(super) static NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    // Made once: the names live as long as the process, as a static's would.
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let mut names: Vec<&'static str> = Method::ALL.iter().map(|m| leak(format!("grpc.calls.{}", m.name()))).collect();
    names.extend(Code::ALL.iter().map(|c| leak(format!("grpc.statuses.{}", c.canonical()))));
    names.extend(["grpc.messages_received", "grpc.messages_sent", "grpc.refused"]);
    names
});

/// The counts in one line: calls by method, the statuses calls ended with (those that
/// occurred), messages each way, and requests that were not calls.
pub(super) fn line(counts: &[u64]) -> String {
    let n = |i: usize| counts.get(i).copied().unwrap_or(0);
    let calls: Vec<String> = Method::ALL.iter().map(|&m| format!("{} {}", m.name(), n(calls(m)))).collect();
    let statuses: Vec<String> = Code::ALL
        .iter()
        .filter(|&&c| n(status(c)) > 0)
        .map(|&c| format!("{} {}", c.canonical(), n(status(c))))
        .collect();
    format!(
        "gRPC calls: {}; statuses: {}; messages {} in, {} out; refused {}",
        calls.join(", "),
        if statuses.is_empty() { "none".to_string() } else { statuses.join(", ") },
        n(RECEIVED),
        n(SENT),
        n(REFUSED)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_and_code_has_its_counter() {
        assert_eq!(NAMES.len(), REFUSED + 1);
        assert_eq!(NAMES[calls(Method::ServerStream)], "grpc.calls.server_stream");
        assert_eq!(NAMES[status(Code::NotFound)], "grpc.statuses.NOT_FOUND");
        assert_eq!(NAMES[SENT], "grpc.messages_sent");
        let mut counts = vec![0; NAMES.len()];
        counts[calls(Method::Unary)] = 3;
        counts[status(Code::Ok)] = 2;
        counts[status(Code::Unavailable)] = 1;
        counts[SENT] = 2;
        assert_eq!(
            line(&counts),
            "gRPC calls: unary 3, server_stream 0, client_stream 0, bidi 0, reflection 0, unknown 0; \
             statuses: OK 2, UNAVAILABLE 1; messages 0 in, 2 out; refused 0"
        );
    }
}
