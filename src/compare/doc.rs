//! A comparison as `compare --json` writes it and `strain report` reads it back: the verdict
//! table's fields at the top (as before this document had a kind), then every run of both
//! sides, so the page can be drawn again from the file alone.

use serde::{Deserialize, Serialize};

use super::Comparison;
use crate::result::{kind_of, Kind, ResultError, RunDoc, SCHEMA_VERSION};

/// A comparison and the runs it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareDoc {
    /// The layout's version.
    pub schema_version: u32,
    /// The strain that wrote it.
    pub strain_version: String,
    /// Always `compare`.
    pub kind: String,
    /// The verdicts.
    #[serde(flatten)]
    pub comparison: Comparison,
    /// Every run, base side first.
    pub runs: Vec<SideRun>,
}

/// One run of a side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideRun {
    /// `base` or `new`.
    pub side: String,
    /// Its label on the page (`A round 2`, `base a.json`).
    pub label: String,
    /// Its result.
    pub result: RunDoc,
}

impl CompareDoc {
    /// The document of comparison `c` over `runs` (base side first, `c.base_runs` of them).
    pub fn new(c: &Comparison, runs: &[(String, RunDoc)]) -> CompareDoc {
        let runs = runs
            .iter()
            .enumerate()
            .map(|(i, (label, result))| SideRun {
                side: if i < c.base_runs { "base" } else { "new" }.into(),
                label: label.clone(),
                result: result.clone(),
            })
            .collect();
        CompareDoc {
            schema_version: SCHEMA_VERSION,
            strain_version: env!("CARGO_PKG_VERSION").into(),
            kind: "compare".into(),
            comparison: c.clone(),
            runs,
        }
    }

    /// Reads a comparison from its JSON.
    pub fn parse(text: &str) -> Result<CompareDoc, ResultError> {
        match kind_of(text)? {
            Kind::Compare => serde_json::from_str(text).map_err(|e| ResultError::Malformed(e.to_string())),
            _ => Err(ResultError::Other("a comparison (compare --json)")),
        }
    }

    /// The runs as (label, result), base side first.
    pub fn labelled(&self) -> Vec<(String, RunDoc)> {
        self.runs.iter().map(|r| (r.label.clone(), r.result.clone())).collect()
    }

    /// The document as `compare --json` writes it: pretty, ending in a newline.
    pub fn to_json(&self) -> String {
        // Plain structs with string keys always serialize.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}
