//! The protocols that are units of their own: a folder each, holding the protocol's wire (its
//! codec), its client transport, its origin driver, its counts (its section of a result, with
//! how the reports show it), its flags and what builds its load from them. Nothing below this
//! folder names one: the engine runs a unit's transport through [`crate::engine::Launch`], the
//! origin drives its connections through [`crate::origin::unit`], the recorder, results,
//! `merge` and the reports hold its counts as a [`crate::stats::section::Section`], and the
//! command line takes its command from [`COMMANDS`], which the binary hands it.
//!
//! The list below is the one place that names them: adding a protocol is its folder and its
//! line there.

use crate::cli::unit::Unit as Command;
use crate::stats::section::Kind;

/// Declares each unit's folder, and lists its command and its section of a result.
macro_rules! units {
    ($($unit:ident),+ $(,)?) => {
        $(pub mod $unit;)+

        /// Every unit's command line (its command, its flags of `strain origin`).
        pub static COMMANDS: &[&dyn Command] = &[$(&$unit::COMMAND),+];

        /// Every unit's sections of a result, as results are read back.
        pub static KINDS: &[&[Kind]] = &[$($unit::KINDS),+];
    };
}

units! {
    ws,
    sse,
    grpc,
}

/// Makes every unit's section readable from results (called once, at start).
pub fn install() {
    // Leaked once: the registry lives as long as the process, as a static would.
    let all: Vec<Kind> = KINDS.iter().flat_map(|k| k.iter().copied()).collect();
    crate::stats::section::install(Box::leak(all.into_boxed_slice()));
}
