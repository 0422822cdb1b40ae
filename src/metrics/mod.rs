//! Live metrics: what a run has done so far, for Prometheus. The run's observer hands each
//! interval row (already merged off the workers' hot path) to a [`Tally`]; the `/metrics`
//! endpoint ([`serve`]) renders it in Prometheus's text format or OpenMetrics
//! ([`exposition`]), and the remote-write pusher ([`remote`]) sends the same samples. Nothing
//! here runs on a worker thread.

mod export;
pub mod exposition;
pub mod remote;
pub mod serve;
mod tally;

pub use export::{ExportError, Exporter, Settings};
pub use tally::{Sample, Tally};

/// Labels put on every series: `--tag key=value` and, for a segment, `segment`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags(pub Vec<(String, String)>);

/// Why a tag cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TagError {
    /// Not `key=value`.
    #[error("invalid tag '{0}': expected key=value")]
    Form(String),
    /// The key is not a Prometheus label name.
    #[error("invalid tag name '{0}': a label name is letters, digits and '_', not starting with a digit or '__'")]
    Name(String),
    /// The key is one strain sets itself.
    #[error("tag name '{0}' is strain's own label: choose another")]
    Reserved(String),
}

/// Labels strain sets on its own series.
const RESERVED: [&str; 5] = ["status", "kind", "le", "segment", "verdict"];

impl Tags {
    /// Parses one `--tag key=value`.
    pub fn parse_one(text: &str) -> Result<(String, String), TagError> {
        let (k, v) = text.split_once('=').ok_or_else(|| TagError::Form(text.to_string()))?;
        let valid = !k.is_empty()
            && !k.starts_with("__")
            && !k.starts_with(|c: char| c.is_ascii_digit())
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(TagError::Name(k.to_string()));
        }
        if RESERVED.contains(&k) || k == "job" || k == "instance" {
            return Err(TagError::Reserved(k.to_string()));
        }
        Ok((k.to_string(), v.to_string()))
    }

    /// The tags with `segment` added when the run is a share of a split test.
    pub fn with_segment(mut self, segment: Option<u32>) -> Tags {
        if let Some(i) = segment {
            self.0.push(("segment".into(), i.to_string()));
        }
        self.0.sort();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_label_names_and_values() {
        assert_eq!(Tags::parse_one("run=a1"), Ok(("run".into(), "a1".into())));
        assert_eq!(Tags::parse_one("env=a=b"), Ok(("env".into(), "a=b".into())));
        // (text, error)
        let rows = [
            ("run", "invalid tag 'run': expected key=value"),
            ("=x", "invalid tag name '': a label name is letters, digits and '_', not starting with a digit or '__'"),
            ("1a=x", "invalid tag name '1a': a label name is letters, digits and '_', not starting with a digit or '__'"),
            ("a-b=x", "invalid tag name 'a-b': a label name is letters, digits and '_', not starting with a digit or '__'"),
            ("__name__=x", "invalid tag name '__name__': a label name is letters, digits and '_', not starting with a digit or '__'"),
            ("status=x", "tag name 'status' is strain's own label: choose another"),
        ];
        for (text, want) in rows {
            assert_eq!(Tags::parse_one(text).unwrap_err().to_string(), want, "{text}");
        }
    }
}
