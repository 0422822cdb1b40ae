//! Renders a finished [`crate::stats::Summary`]: wrk's text ([`text`]) and JSON ([`json`]).
//! Reporters read the summary and the config only; they know nothing of the engine.

pub mod hdrlog;
pub mod json;
pub mod live;
pub mod proxy;
pub mod text;
pub mod units;
pub mod wrk2;

/// Golden-file comparison for the reporters' tests.
#[cfg(test)]
pub(crate) fn check_golden(name: &str, got: &str) {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("STRAIN_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert_eq!(got, want, "run with STRAIN_BLESS=1 to accept a deliberate change");
}
