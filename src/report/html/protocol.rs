//! The protocol tables of a run page: what HTTP/2, HTTP/3 and gRPC counted, a row per figure and a
//! column per result (figures down, results across: a panel stays narrow however many
//! figures there are).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{esc, Overlay};
use crate::report::units::grouped;
use crate::result::{Http2Doc, Http3Doc, WebSocketDoc};
use crate::stats::{h2_named_resets, h3_named_codes, GrpcCounts};

/// The HTTP/2 table: a row per figure, a column per result.
pub(super) fn http2(o: &Overlay) -> String {
    // Figures down, results across: the panel stays narrow however many figures there are.
    let docs: Vec<(&String, &Http2Doc)> = o.results.iter().filter_map(|(l, d)| Some((l, d.http2.as_ref()?))).collect();
    type Figure = fn(&Http2Doc) -> String;
    let rows: [(&str, &str, Figure); 8] = [
        ("protocol", "h2_protocol", |h| h.protocol.clone()),
        ("streams per connection", "streams", |h| h.streams_per_connection.to_string()),
        ("GOAWAYs received", "goaways", |h| grouped(h.counts.goaways as f64, 0)),
        ("requests sent again after a GOAWAY", "retried", |h| grouped(h.counts.retried as f64, 0)),
        ("connections ended by protocol errors", "protocol_errors", |h| grouped(h.counts.protocol_errors as f64, 0)),
        ("bodies that waited for flow control", "stalls", |h| grouped(h.counts.flow_control_stalls as f64, 0)),
        ("streams reset, by code", "resets", |h| by_name(&h2_named_resets(&h.counts.resets))),
        ("header compression", "compression", |h| {
            let h = &h.counts;
            if h.header_bytes > 0 {
                format!("{:.0}% saved", 100.0 * (1.0 - h.header_frame_bytes as f64 / h.header_bytes as f64))
            } else {
                "-".into()
            }
        }),
    ];
    table("http2", "HTTP/2", &docs, &rows, "Stream resets also appear over time among the errors (kind reset).")
}

/// The HTTP/3 table: a row per figure, a column per result.
pub(super) fn http3(o: &Overlay) -> String {
    let docs: Vec<(&String, &Http3Doc)> = o.results.iter().filter_map(|(l, d)| Some((l, d.http3.as_ref()?))).collect();
    type Figure = fn(&Http3Doc) -> String;
    let rows: [(&str, &str, Figure); 10] = [
        ("streams per connection", "streams", |h| h.streams_per_connection.to_string()),
        ("handshakes (mean, max)", "handshakes", |h| {
            let (h, ms) = (&h.counts.handshakes, |us: f64| format!("{:.2} ms", us / 1000.0));
            format!("{} ({}, {})", grouped(h.count as f64, 0), ms(h.mean_us()), ms(h.us_max as f64))
        }),
        ("failed handshakes, by cause", "handshake_failures", |h| by_name(&h.counts.handshake_failures.named())),
        ("packets sent", "packets_sent", |h| grouped(h.counts.packets_sent as f64, 0)),
        ("packets lost (retransmitted)", "packets_lost", |h| {
            let h = &h.counts;
            format!("{} ({})", grouped(h.packets_lost as f64, 0), grouped(h.packets_retransmitted as f64, 0))
        }),
        ("streams reset, by code", "resets", |h| by_name(&h3_named_codes(&h.counts.resets))),
        ("connections closed, by code", "closes", |h| by_name(&h3_named_codes(&h.counts.closes))),
        ("idle timeouts", "idle_timeouts", |h| grouped(h.counts.idle_timeouts as f64, 0)),
        ("GOAWAYs (requests sent again)", "goaways", |h| {
            format!("{} ({})", grouped(h.counts.goaways as f64, 0), grouped(h.counts.retried as f64, 0))
        }),
        ("protocol errors", "h3_protocol_errors", |h| grouped(h.counts.protocol_errors as f64, 0)),
    ];
    table("http3", "HTTP/3", &docs, &rows, "Packets lost are QUIC's count; their frames were sent again.")
}

/// The gRPC table: a row per figure, a column per result.
pub(super) fn grpc(o: &Overlay) -> String {
    let docs: Vec<(&String, &GrpcCounts)> =
        o.results.iter().filter_map(|(l, d)| Some((l, &d.grpc.as_ref()?.counts))).collect();
    type Figure = fn(&GrpcCounts) -> String;
    let rows: [(&str, &str, Figure); 6] = [
        ("calls, by status", "grpc_codes", |g| {
            by_name(&g.codes.seen().map(|(c, n)| (c.canonical(), n)).collect::<BTreeMap<_, _>>())
        }),
        ("HTTP status not 200", "grpc_http_errors", |g| grouped(g.http_errors as f64, 0)),
        ("no grpc-status", "grpc_missing_status", |g| grouped(g.missing_status as f64, 0)),
        ("bad messages", "grpc_bad_messages", |g| grouped(g.bad_messages as f64, 0)),
        ("messages sent (mean size)", "grpc_sent", |g| messages(g.messages_sent, g.message_bytes_sent)),
        ("messages received (mean size)", "grpc_received", |g| messages(g.messages_received, g.message_bytes_received)),
    ];
    table(
        "grpc",
        "gRPC",
        &docs,
        &rows,
        "Calls that did not end OK also appear over time among the errors (kind status).",
    )
}

/// The WebSocket table: a row per figure, a column per result.
pub(super) fn websocket(o: &Overlay) -> String {
    let docs: Vec<(&String, &WebSocketDoc)> =
        o.results.iter().filter_map(|(l, d)| Some((l, d.websocket.as_ref()?))).collect();
    type Figure = fn(&WebSocketDoc) -> String;
    let rows: [(&str, &str, Figure); 9] = [
        ("protocol", "ws_protocol", |w| w.protocol.clone()),
        ("upgrades (mean, max)", "ws_handshakes", |w| {
            let (h, ms) = (&w.counts.handshakes, |us: f64| format!("{:.2} ms", us / 1000.0));
            format!("{} ({}, {})", grouped(h.count as f64, 0), ms(h.mean_us()), ms(h.us_max as f64))
        }),
        ("upgrades refused, by status", "ws_refused", |w| by_name(&w.counts.upgrades_refused)),
        ("closed by the server, by code", "ws_closes", |w| by_name(&w.counts.closes)),
        ("connections lost, by cause", "ws_drops", |w| by_name(&w.counts.drops.named())),
        ("messages sent (mean size)", "ws_sent", |w| messages(w.counts.messages_sent, w.counts.bytes_sent)),
        ("messages received (mean size)", "ws_received", |w| {
            messages(w.counts.messages_received, w.counts.bytes_received)
        }),
        ("unsolicited messages", "ws_unsolicited", |w| grouped(w.counts.unsolicited as f64, 0)),
        ("pongs (mean, max round trip)", "ws_pongs", |w| {
            let p = &w.counts.pongs.0;
            format!(
                "{} ({:.2} ms, {:.2} ms)",
                grouped(p.count as f64, 0),
                p.mean_us() / 1000.0,
                p.us_max as f64 / 1000.0
            )
        }),
    ];
    table(
        "websocket",
        "WebSocket",
        &docs,
        &rows,
        "Messages lost with their connection also appear over time among the errors.",
    )
}

/// A count of messages and their mean size.
fn messages(n: u64, bytes: u64) -> String {
    let mean = if n > 0 { bytes as f64 / n as f64 } else { 0.0 };
    format!("{} ({} B)", grouped(n as f64, 0), grouped(mean, 0))
}

/// A table's row: its figure's name, the metric it is tagged with, how it is written.
pub(super) type Row<T> = (&'static str, &'static str, fn(&T) -> String);

/// A protocol's panel: a row per figure (its name, the metric it is tagged with, how it is
/// written), a column per result.
pub(super) fn table<T>(panel: &str, title: &str, docs: &[(&String, &T)], rows: &[Row<T>], caption: &str) -> String {
    let mut out = format!("<figure class=\"panel\" data-panel=\"{panel}\"><h3>{title}</h3><table><tr><th></th>");
    for (label, _) in docs {
        let _ = write!(out, "<th>{}</th>", esc(label));
    }
    out.push_str("</tr>");
    for (name, metric, figure) in rows {
        let _ = write!(out, "<tr><td>{name}</td>");
        for (_, h) in docs {
            let _ = write!(out, "<td data-metric=\"{metric}\">{}</td>", esc(&figure(h)));
        }
        out.push_str("</tr>");
    }
    let _ = writeln!(out, "</table><figcaption>{caption}</figcaption></figure>");
    out
}

/// Counts by name, "none" when there are none.
fn by_name<K: std::fmt::Display>(m: &BTreeMap<K, u64>) -> String {
    match m.is_empty() {
        true => "none".to_string(),
        false => m.iter().map(|(k, v)| format!("{k} {}", grouped(*v as f64, 0))).collect::<Vec<_>>().join(", "),
    }
}
