//! Renders a finished [`crate::stats::Summary`]: wrk's text ([`text`]) and JSON ([`json`]).
//! Reporters read the summary and the config only; they know nothing of the engine.

pub mod hdrlog;
pub mod json;
pub mod live;
pub mod proxy;
pub mod text;
pub mod units;
pub mod wrk2;
