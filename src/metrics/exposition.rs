//! Prometheus's text exposition format (0.0.4) and OpenMetrics 1.0 text, from the tally's
//! families: `# HELP`, `# TYPE`, then one line per sample with its labels escaped.

use std::fmt::Write;

use super::tally::{Family, Kind};

/// The content type of each format.
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// OpenMetrics, for a scraper whose `Accept` asks for it.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The families as Prometheus's text format, or OpenMetrics (counters typed by their family
/// name, and `# EOF` at the end).
pub fn render(families: &[Family], openmetrics: bool) -> String {
    let mut out = String::with_capacity(4096);
    for f in families {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        // Prometheus's format names a counter with its `_total`; OpenMetrics names the family.
        let name =
            if f.kind == Kind::Counter && !openmetrics { format!("{}_total", f.name) } else { f.name.to_string() };
        let _ = writeln!(out, "# HELP {name} {}", f.help);
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for s in &f.samples {
            out.push_str(&s.name);
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{k}=\"{}\"", escape(v));
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", number(s.value));
        }
    }
    if openmetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// A label value escaped: backslash, double quote and newline.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A sample value: whole numbers without a fraction, as Prometheus's own clients write them.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// True when an `Accept` header asks for OpenMetrics.
pub fn wants_openmetrics(accept: &str) -> bool {
    accept.split(',').any(|part| part.trim().starts_with("application/openmetrics-text"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Tags, Tally};

    #[test]
    fn both_formats_type_and_label_every_sample() {
        let t = Tally::new(0.0);
        let fams = t.families(&Tags(vec![("run".into(), "a\"b".into())]));
        let text = render(&fams, false);
        assert!(text.contains("# TYPE strain_errors_total counter\n"), "{text}");
        assert!(text.contains("strain_errors_total{kind=\"timeout\",run=\"a\\\"b\"} 0\n"), "{text}");
        assert!(text.contains("# TYPE strain_request_duration_seconds histogram\n"));
        assert!(text.contains("strain_request_duration_seconds_bucket{le=\"+Inf\",run=\"a\\\"b\"} 0\n"), "{text}");
        let om = render(&fams, true);
        assert!(om.contains("# TYPE strain_errors counter\n") && om.ends_with("# EOF\n"), "{om}");
        assert!(wants_openmetrics("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"));
        assert!(!wants_openmetrics("text/plain"));
        assert_eq!((number(3.0), number(0.25), number(f64::INFINITY)), ("3".into(), "0.25".into(), "+Inf".into()));
    }
}
