//! A replay's table on the run page: what was recorded, what was sent, and every record skipped
//! or generated, by cause, so that recorded, sent and skipped add up on the page as in the text.

use super::protocol::table;
use super::Overlay;
use crate::report::replay::skipped_by_cause;
use crate::report::units::grouped;
use crate::result::ReplayDoc;

/// The replay table: a row per figure, a column per result that is a replay.
pub(super) fn replay(o: &Overlay) -> String {
    let docs: Vec<(&String, &ReplayDoc)> =
        o.results.iter().filter_map(|(l, d)| Some((l, d.replay.as_ref()?))).collect();
    if docs.is_empty() {
        return String::new();
    }
    type Figure = fn(&ReplayDoc) -> String;
    let rows: [(&str, &str, Figure); 7] = [
        ("recordings", "replay_files", |r| {
            r.note.files.iter().map(|f| format!("{} ({})", f.path, f.format)).collect::<Vec<_>>().join(", ")
        }),
        ("records read (one pass)", "replay_records", |r| grouped(r.counts.records as f64, 0)),
        ("requests sent per pass", "replay_requests", |r| grouped(r.note.requests as f64, 0)),
        ("skipped, by cause", "replay_skipped", |r| {
            let causes = skipped_by_cause(&r.counts);
            if causes.is_empty() {
                return "none".into();
            }
            causes.iter().map(|(n, why)| format!("{} {why}", grouped(*n as f64, 0))).collect::<Vec<_>>().join("; ")
        }),
        ("bodies generated at their recorded size", "replay_generated", |r| grouped(r.counts.generated_body as f64, 0)),
        ("first lines in no layout", "replay_bad_lines", |r| {
            if r.bad_lines.is_empty() {
                "none".into()
            } else {
                r.bad_lines.join("; ")
            }
        }),
        ("behind schedule (p99, max)", "replay_lag", |r| {
            format!("{:.2} ms, {:.2} ms", r.lag_us.p99 as f64 / 1000.0, r.lag_us.max as f64 / 1000.0)
        }),
    ];
    table(
        "replay",
        "Replay",
        &docs,
        &rows,
        "Every record read is sent, skipped by one of these causes, or outside --from/--to.",
    )
}
