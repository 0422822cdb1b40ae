//! The protocols that are units of their own: a folder each, holding the protocol's wire (its
//! codec), its client transport, its counts (its section of a result, with how the reports
//! show it) and what starts it. Nothing below this folder names one: the engine runs a unit's
//! transport through [`crate::engine::Launch`], and the recorder, results, `merge` and the
//! reports hold its counts as a [`crate::stats::section::Section`].
//!
//! [`KINDS`] is the one list of them. Adding a protocol is its folder and its line there.

pub mod ws;

use crate::stats::section::{install as install_kinds, Kind};

/// Every unit's section of a result, as results are read back.
pub static KINDS: &[Kind] = &[Kind::of::<ws::counts::WsCounts>()];

/// Makes every unit's section readable from results (called once, at start).
pub fn install() {
    install_kinds(KINDS);
}
