//! Fuzzing of the two parsers that take bytes from the network, on stable Rust: the client's
//! response parser (this module's `response`) and the origin's request parser
//! (`origin/conn/fuzz.rs`, which needs the origin's private types).
//!
//! Input `i` of a run is a pure function of the run's seed and `i` (the origin's SplitMix64
//! seeded with both): a near-valid stream from [`gen`], damaged by [`gen::mutate`] half the
//! time. So a failure names its seed and index and reproduces alone, with no corpus to keep.
//! Each input is fed whole, one byte at a time (every boundary at once), cut once at a random
//! byte and cut into random pieces; every way must agree with [`reference`], a separate
//! non-incremental parser, on each message's status, end, keep-alive, fields and body, and on
//! how the input ends. Memory held between reads and the progress of every call are checked
//! too; a panic is caught and reported with its input.
//!
//! `cargo test` runs a short seeded run; scripts/fuzz.sh runs the ignored long ones in release
//! (`STRAIN_FUZZ_INPUTS`, `STRAIN_FUZZ_SEED`) and prints counts and times (docs/FUZZING.md).

pub(crate) mod gen;
pub(crate) mod reference;
mod response;

use std::fmt::Write as _;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::rng::Rng;
use reference::End;

/// Inputs per parser in the seeded run of the ordinary test suite (a few seconds in debug).
pub(crate) const SHORT_RUN: u64 = 5_000;
/// Inputs per parser in the long run when `STRAIN_FUZZ_INPUTS` is not set.
const LONG_RUN: u64 = 10_000_000;

/// Inputs and seed of the long run, from the environment: `STRAIN_FUZZ_INPUTS` inputs from
/// index `STRAIN_FUZZ_FROM` (to replay one), of seed `STRAIN_FUZZ_SEED`.
pub(crate) fn long_run() -> (Range<u64>, u64) {
    let var = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let from = var("STRAIN_FUZZ_FROM", 0);
    (from..from.saturating_add(var("STRAIN_FUZZ_INPUTS", LONG_RUN)), var("STRAIN_FUZZ_SEED", 1))
}

/// One input and the generator that continues to decide how it is fed.
pub(crate) struct Case {
    pub rng: Rng,
    pub bytes: Vec<u8>,
}

/// Input `index` of run `seed`.
pub(crate) fn case(seed: u64, index: u64, generate: fn(&mut Rng, &mut Vec<u8>)) -> Case {
    let mut rng = Rng::for_thread(seed, index as usize);
    let mut bytes = Vec::new();
    generate(&mut rng, &mut bytes);
    if rng.chance(0.5) {
        gen::mutate(&mut rng, &mut bytes);
    }
    Case { rng, bytes }
}

/// Ways to cut `len` bytes into reads, as piece lengths: whole, byte by byte, one random cut,
/// random pieces.
pub(crate) fn splits(rng: &mut Rng, len: usize) -> [Vec<usize>; 4] {
    let whole = vec![len];
    let bytes = vec![1; len];
    let cut = 1 + rng.below(len.max(1) as u64) as usize;
    let once = if cut < len { vec![cut, len - cut] } else { vec![len] };
    let mut pieces = Vec::new();
    let mut left = len;
    while left > 0 {
        let n = 1 + rng.below((left as u64).min(64)) as usize;
        pieces.push(n);
        left -= n;
    }
    [whole, bytes, once, pieces]
}

/// How the parser under test ended an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Nothing left over.
    Clean,
    /// Inside a message.
    Partial,
    /// It refused the input.
    Error,
}

/// Whether `got` is an acceptable ending where the reference says `want`. A parser may judge
/// an unfinished head early (httparse does) or only once it ends (strain waits for the blank
/// line before parsing a head again), so those cases have two right answers.
pub(crate) fn ending_agrees(got: Ended, want: End) -> bool {
    match want {
        End::Clean => got == Ended::Clean,
        End::Partial { in_head: false } => got == Ended::Partial,
        End::Partial { in_head: true } | End::Invalid { head_unfinished: true } => got != Ended::Clean,
        End::Invalid { head_unfinished: false } => got == Ended::Error,
    }
}

/// Counts of one run, printed by the long run.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub inputs: u64,
    /// Inputs the reference found entirely valid.
    pub valid: u64,
    pub partial: u64,
    pub invalid: u64,
    /// Parser calls made over all ways of feeding.
    pub feeds: u64,
    pub bytes: u64,
    /// The slowest input, all ways of feeding included, and its index.
    pub slowest: Duration,
    pub slowest_index: u64,
}

impl Tally {
    /// Counts the reference's verdict on one input.
    pub(crate) fn verdict(&mut self, end: End) {
        match end {
            End::Clean => self.valid += 1,
            End::Partial { .. } => self.partial += 1,
            End::Invalid { .. } => self.invalid += 1,
        }
    }
}

/// Runs `check` on inputs `indices` of run `seed`; panics naming the first failing input.
/// `check` returns an explanation when a property fails.
pub(crate) fn run(
    name: &str,
    seed: u64,
    indices: Range<u64>,
    generate: fn(&mut Rng, &mut Vec<u8>),
    mut check: impl FnMut(Case, &mut Tally) -> Result<(), String>,
) -> Tally {
    let mut tally = Tally::default();
    for index in indices {
        let case = case(seed, index, generate);
        let bytes = case.bytes.clone();
        let started = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| check(case, &mut tally)));
        if started.elapsed() > tally.slowest {
            tally.slowest = started.elapsed();
            tally.slowest_index = index;
        }
        tally.inputs += 1;
        tally.bytes += bytes.len() as u64;
        let why = match result {
            Ok(Ok(())) => continue,
            Ok(Err(why)) => why,
            Err(_) => "panicked (message above)".to_string(),
        };
        panic!("{name} fuzz input {index} of seed {seed} fails: {why}\ninput: {}", escape(&bytes));
    }
    tally
}

/// `bytes` as a Rust byte-string literal, to paste into a regression test.
pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut s = String::from("b\"");
    if crate::http::escape_into(&mut s, bytes, 2000, true) {
        let _ = write!(s, "...({} bytes)", bytes.len());
    }
    s.push('"');
    s
}

/// Prints a long run's figures (the script shows them; the ordinary suite never runs this).
pub(crate) fn report(name: &str, seed: u64, tally: &Tally, took: Duration) {
    // The machine is shared: CPU time says more than wall time.
    let cpu_s = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            // After the command's ")" comes field 3; utime and stime are fields 14 and 15 of
            // proc_pid_stat(5), in clock ticks of 1/100 s.
            let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
            let ticks = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
            Some((ticks(14)? + ticks(15)?) as f64 / 100.0)
        })
        .unwrap_or(f64::NAN);
    println!(
        "{name}: {} inputs (seed {seed}; reference: {} valid, {} partial, {} invalid), {} parser calls, \
         {} MB, in {:.1} s ({cpu_s:.1} s CPU, {:.0} inputs/s); slowest input {:.1} ms (#{})",
        tally.inputs,
        tally.valid,
        tally.partial,
        tally.invalid,
        tally.feeds,
        tally.bytes / 1_000_000,
        took.as_secs_f64(),
        tally.inputs as f64 / took.as_secs_f64().max(1e-9),
        tally.slowest.as_secs_f64() * 1000.0,
        tally.slowest_index
    );
}
