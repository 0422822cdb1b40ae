//! The A/B runner (`strain compare URL_A URL_B`): strain runs both sides itself, interleaved
//! A B, B A, A B … so drift (CPU frequency, a neighbour, a warming cache) hits both alike,
//! each run the same load after an unrecorded warm-up, and judges them as runs (see the
//! module above). With [`Rounds::Auto`] it adds rounds until every metric is decided or the
//! most rounds are run, each look at its share of the error rate ([`super::Rule::looks`]).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::Config;
use crate::result::RunDoc;
use crate::run::{self, Failure, OriginPlacement, RunConfig, RunError, Workload};

use super::{compare, Comparison, Rule, Side};

/// The fewest rounds a sequential comparison looks at (Welch's interval needs two runs a
/// side, and two are too few to decide much).
pub const FIRST_LOOK: u32 = 3;

/// How many rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounds {
    /// Exactly this many.
    Fixed(u32),
    /// Until decided, at most this many.
    Auto {
        /// The most rounds.
        max: u32,
    },
}

/// One side: its load, and a command run before each of its runs (`--prepare-a`).
#[derive(Debug, Clone)]
pub struct AbSide {
    /// The load, warm-up included.
    pub config: Config,
    /// What each request is.
    pub workload: Workload,
    /// A shell command run before each run of this side.
    pub prepare: Option<String>,
}

/// What the runner is told of as it goes.
pub enum AbEvent<'a> {
    /// A run starts: its side ('A' or 'B'), round (from 1) and the rounds planned.
    Starting {
        /// 'A' or 'B'.
        side: char,
        /// Its round, from 1.
        round: u32,
        /// Rounds planned (the most, with `--rounds auto`).
        of: u32,
    },
    /// A run ended.
    Ran {
        /// 'A' or 'B'.
        side: char,
        /// Its round.
        round: u32,
        /// Its result.
        doc: &'a RunDoc,
    },
}

/// Why the runner stopped short of a verdict.
#[derive(Debug, thiserror::Error)]
pub enum AbError {
    /// A `--prepare` command failed.
    #[error("--prepare-{side} '{command}' failed before round {round}: {why}")]
    Prepare {
        /// 'a' or 'b'.
        side: char,
        /// The command.
        command: String,
        /// Its round.
        round: u32,
        /// Exit status or OS error.
        why: String,
    },
    /// A run could not start.
    #[error("{side} round {round}: {source}")]
    Run {
        /// 'A' or 'B'.
        side: char,
        /// Its round.
        round: u32,
        /// What failed.
        source: RunError,
    },
    /// A run sent nothing (no connection) or its script failed: its values would be noise.
    #[error("{side} round {round}: {why}")]
    Failed {
        /// 'A' or 'B'.
        side: char,
        /// Its round.
        round: u32,
        /// What happened.
        why: String,
    },
}

/// Both sides' runs and the verdict.
pub struct AbOutcome {
    /// A's results, in round order.
    pub a: Vec<RunDoc>,
    /// B's results.
    pub b: Vec<RunDoc>,
    /// The comparison of A (base) with B (new).
    pub comparison: Comparison,
    /// Rounds run.
    pub rounds: u32,
    /// Ctrl-C ended it early (the verdict rests on what ran).
    pub stopped: bool,
}

/// An A/B comparison to run.
#[derive(Debug, Clone)]
pub struct AbSetup {
    /// The base side.
    pub a: AbSide,
    /// The new side.
    pub b: AbSide,
    /// How many rounds.
    pub rounds: Rounds,
    /// The smallest change that counts, percent.
    pub allowed_pct: f64,
    /// The command line, for each run's result.
    pub command: Vec<String>,
}

/// Runs the plan's rounds of A and B and compares them; `on` hears each run start and end.
pub fn run(plan: &AbSetup, stop: &AtomicBool, on: &mut dyn FnMut(AbEvent)) -> Result<AbOutcome, AbError> {
    let AbSetup { a, b, rounds, allowed_pct, command } = plan;
    let (rounds, allowed_pct) = (*rounds, *allowed_pct);
    let (most, rule) = rule(rounds, allowed_pct);
    let (mut docs_a, mut docs_b) = (Vec::new(), Vec::new());
    let (mut side_a, mut side_b) = (Side::default(), Side::default());
    let mut done = 0;
    'rounds: for round in 1..=most {
        // A B in odd rounds, B A in even ones: each side runs first as often as second.
        let order = if round % 2 == 1 { [('A', a), ('B', b)] } else { [('B', b), ('A', a)] };
        for (name, side) in order {
            if stop.load(Ordering::Relaxed) {
                break 'rounds;
            }
            on(AbEvent::Starting { side: name, round, of: most });
            let doc = one_run(name, side, round, command, stop)?;
            on(AbEvent::Ran { side: name, round, doc: &doc });
            if name == 'A' {
                side_a.push(&doc);
                docs_a.push(doc);
            } else {
                side_b.push(&doc);
                docs_b.push(doc);
            }
        }
        done = round;
        if decided(rounds, round, &side_a, &side_b, rule) {
            break;
        }
    }
    let stopped = stop.load(Ordering::Relaxed);
    let comparison = compare(&side_a, &side_b, rule);
    Ok(AbOutcome { a: docs_a, b: docs_b, comparison, rounds: done, stopped })
}

/// The rule for the rounds of `rounds`: the first, and whether a sequential comparison may
/// stop after `round` (every metric decided at this look's share of the error rate).
pub fn rule(rounds: Rounds, allowed_pct: f64) -> (u32, Rule) {
    match rounds {
        Rounds::Fixed(n) => (n.max(1), Rule::fixed(allowed_pct)),
        Rounds::Auto { max } => {
            let max = max.max(FIRST_LOOK);
            (max, Rule { allowed_pct, looks: max - FIRST_LOOK + 1 })
        }
    }
}

/// Whether a sequential comparison stops after `round`: every metric is decided.
pub fn decided(rounds: Rounds, round: u32, a: &Side, b: &Side, rule: Rule) -> bool {
    matches!(rounds, Rounds::Auto { .. }) && round >= FIRST_LOOK && !compare(a, b, rule).inconclusive()
}

/// One run of `side`, after its prepare command.
fn one_run(name: char, side: &AbSide, round: u32, command: &[String], stop: &AtomicBool) -> Result<RunDoc, AbError> {
    if let Some(command) = &side.prepare {
        let fail =
            |why: String| AbError::Prepare { side: name.to_ascii_lowercase(), command: command.clone(), round, why };
        let status =
            std::process::Command::new("sh").arg("-c").arg(command).status().map_err(|e| fail(e.to_string()))?;
        if !status.success() {
            return Err(fail(status.to_string()));
        }
    }
    let test = RunConfig {
        load: side.config.clone(),
        workload: side.workload.clone(),
        origin: OriginPlacement::Elsewhere,
        checks: Default::default(),
    };
    let result = run::run(test, stop, &mut run::Quiet).map_err(|source| AbError::Run { side: name, round, source })?;
    match &result.failure {
        Some(Failure::NothingConnected { why }) => {
            let why = format!("no connection to {} succeeded: {why}", side.config.target.url);
            return Err(AbError::Failed { side: name, round, why });
        }
        Some(Failure::Script(e)) => return Err(AbError::Failed { side: name, round, why: e.to_string() }),
        None => {}
    }
    Ok(crate::report::json::document(&result, &side.config, command))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::runs::RunValues;
    use crate::compare::Verdict;
    use crate::rng::Rng;

    /// A run in rate mode: latency `p50` scaled by a log-normal factor of spread `sd`, the
    /// throughput held by the schedule (a tenth of that spread).
    fn run(rng: &mut Rng, p50: f64, sd: f64) -> RunValues {
        let (u, v) = (rng.unit().max(1e-300), rng.unit());
        let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
        let f = (sd * z).exp();
        RunValues { values: [1000.0 * (sd * z / 10.0).exp(), p50 * f, 2.0 * p50 * f, 3.0 * p50 * f, 0.0] }
    }

    /// A sequential comparison of simulated runs: its last comparison and rounds.
    fn sequence(rng: &mut Rng, shift: f64, sd: f64, max: u32) -> (Comparison, u32) {
        let rounds = Rounds::Auto { max };
        let (_, rule) = rule(rounds, 5.0);
        let (mut a, mut b) = (Side::default(), Side::default());
        for round in 1..=max {
            a.runs.push(run(rng, 100.0, sd));
            b.runs.push(run(rng, 100.0 * shift, sd));
            if decided(rounds, round, &a, &b, rule) || round == max {
                return (compare(&a, &b, rule), round);
            }
        }
        unreachable!("the loop returns at the most rounds")
    }

    #[test]
    fn the_sequential_rule_holds_its_error_rate_and_stops_early_on_a_shift() {
        let mut rng = Rng::new(9);
        let trials = 1000;
        // No shift, 10% run-to-run noise: looking after every round must not raise the false
        // regression rate above the fixed test's (at most 1% per comparison).
        let alarms = (0..trials).filter(|_| sequence(&mut rng, 1.0, 0.1, 20).0.regressed()).count();
        assert!(alarms * 100 <= trials, "{alarms} of {trials}");
        // 25% slower with 5% noise: found, and mostly at the first looks.
        let mut rounds = Vec::new();
        for _ in 0..trials {
            let (c, r) = sequence(&mut rng, 1.25, 0.05, 20);
            assert_eq!(c.metrics[1].verdict, Verdict::Worse, "{c:#?}");
            rounds.push(r);
        }
        rounds.sort_unstable();
        assert!(rounds[trials / 2] <= 5, "median rounds {}", rounds[trials / 2]);
        // Fixed rounds never stop early.
        let (_, rule) = rule(Rounds::Fixed(5), 5.0);
        let side = Side { runs: vec![run(&mut rng, 100.0, 0.0); 3], intervals: Vec::new() };
        assert!(!decided(Rounds::Fixed(5), 3, &side, &side, rule));
    }
}
