//! The pure search over rates: grow ×2 from the first rate until a step fails, then bisect
//! between the highest pass and the lowest fail until they are within the precision. It sees
//! only each step's outcome, so table tests drive it with a fake server.

/// How a step came out, as far as the search is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The service met its SLO at this rate.
    Pass,
    /// The service did not (an SLO term failed, or it fell behind the rate).
    Fail,
    /// The step measured the load generator, not the service: the search cannot go on.
    Limit,
}

/// Why the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The highest pass and the lowest fail are within the precision.
    Converged,
    /// The step at `--max` passed: the capacity is above it.
    MaxPassed,
    /// Every rate failed, down to the floor.
    NothingPassed,
    /// The generator (threads, CPU or connections) reached its limit first.
    Limit,
    /// The step budget ran out before converging (an SLO that flips back and forth).
    StepBudget,
    /// Stopped from outside (Ctrl-C).
    Stopped,
}

/// The lowest rate tried when everything fails: below this nothing useful is measured in a step.
pub const FLOOR_PER_S: f64 = 1.0;
/// Most steps in one search: ×2 from 1 req/s reaches 10^9 in 30 steps, and bisecting to 0.1%
/// takes 10 more.
pub const MAX_STEPS: usize = 60;

/// Where the search stands.
#[derive(Debug, Clone)]
pub struct Bisection {
    precision: f64,
    max: Option<f64>,
    /// Highest rate that passed.
    pub pass: Option<f64>,
    /// Lowest rate that failed.
    pub fail: Option<f64>,
    next: Option<f64>,
    steps: usize,
    end: Option<End>,
}

impl Bisection {
    /// A search starting at `start` req/s, never above `max`, ending within `precision` (a
    /// share, e.g. 0.02).
    pub fn new(start: f64, max: Option<f64>, precision: f64) -> Bisection {
        let start = max.map_or(start, |m| start.min(m)).max(FLOOR_PER_S);
        Bisection { precision, max, pass: None, fail: None, next: Some(start), steps: 0, end: None }
    }

    /// The rate to try next; `None` once the search has ended.
    pub fn next(&self) -> Option<f64> {
        self.next
    }

    /// Why the search ended, once it has.
    pub fn end(&self) -> Option<End> {
        self.end
    }

    /// Ends the search from outside.
    pub fn stop(&mut self) {
        self.finish(End::Stopped);
    }

    fn finish(&mut self, end: End) {
        self.next = None;
        self.end.get_or_insert(end);
    }

    /// Takes the outcome of the step at `rate` and decides the next rate.
    pub fn record(&mut self, rate: f64, outcome: Outcome) {
        self.steps += 1;
        match outcome {
            Outcome::Limit => return self.finish(End::Limit),
            Outcome::Pass => self.pass = Some(self.pass.map_or(rate, |p| p.max(rate))),
            Outcome::Fail => self.fail = Some(self.fail.map_or(rate, |f| f.min(rate))),
        }
        self.next = match (self.pass, self.fail) {
            (Some(p), None) => match self.max {
                Some(m) if p >= m => return self.finish(End::MaxPassed),
                Some(m) => Some((p * 2.0).min(m)),
                None => Some(p * 2.0),
            },
            (None, Some(f)) if f / 2.0 < FLOOR_PER_S => return self.finish(End::NothingPassed),
            (None, Some(f)) => Some(f / 2.0),
            (Some(p), Some(f)) if f - p <= self.precision * p => return self.finish(End::Converged),
            (Some(p), Some(f)) => Some((p + f) / 2.0),
            (None, None) => None,
        };
        if self.steps >= MAX_STEPS {
            self.finish(End::StepBudget);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against `step`; returns the plan and the rates tried.
    fn search(start: f64, max: Option<f64>, step: &mut dyn FnMut(f64) -> Outcome) -> (Bisection, Vec<f64>) {
        let mut bisection = Bisection::new(start, max, 0.02);
        let mut tried = Vec::new();
        while let Some(rate) = bisection.next() {
            tried.push(rate);
            bisection.record(rate, step(rate));
        }
        (bisection, tried)
    }

    fn capacity(c: f64) -> impl FnMut(f64) -> Outcome {
        move |r| if r <= c { Outcome::Pass } else { Outcome::Fail }
    }

    #[test]
    fn capacities_are_found_within_the_precision() {
        // (capacity, start)
        for (cap, start) in [(100.0, 10.0), (3_700.0, 250.0), (50_000.0, 1_000.0), (3_700.0, 90_000.0), (100.0, 1.0)] {
            let (bisection, tried) = search(start, None, &mut capacity(cap));
            assert_eq!(bisection.end(), Some(End::Converged), "{cap}: {tried:?}");
            let (p, f) = (bisection.pass.unwrap(), bisection.fail.unwrap());
            assert!(p <= cap && f > cap, "{cap}: pass {p}, fail {f}");
            assert!((f - p) / p <= 0.02, "{cap}: pass {p}, fail {f}");
            assert!(tried.len() <= 20, "{cap}: {} steps: {tried:?}", tried.len());
        }
    }

    #[test]
    fn the_rates_grow_by_two_then_bisect() {
        let (_, tried) = search(100.0, None, &mut capacity(500.0));
        assert_eq!(&tried[..5], &[100.0, 200.0, 400.0, 800.0, 600.0]);
        assert_eq!(tried[5], 500.0);
    }

    #[test]
    fn a_generator_limit_stops_the_search_at_once() {
        let (bisection, tried) =
            search(1_000.0, None, &mut |r| if r > 30_000.0 { Outcome::Limit } else { Outcome::Pass });
        assert_eq!(bisection.end(), Some(End::Limit));
        assert_eq!(tried, vec![1_000.0, 2_000.0, 4_000.0, 8_000.0, 16_000.0, 32_000.0]);
        assert_eq!((bisection.pass, bisection.fail), (Some(16_000.0), None));
    }

    #[test]
    fn max_caps_the_rates_and_a_pass_there_ends_it() {
        let (bisection, tried) = search(1_000.0, Some(5_000.0), &mut capacity(1e9));
        assert_eq!(tried, vec![1_000.0, 2_000.0, 4_000.0, 5_000.0]);
        assert_eq!(bisection.end(), Some(End::MaxPassed));
    }

    #[test]
    fn when_everything_fails_it_goes_down_to_the_floor() {
        let (bisection, tried) = search(64.0, None, &mut |_| Outcome::Fail);
        assert_eq!(bisection.end(), Some(End::NothingPassed));
        assert_eq!(tried, vec![64.0, 32.0, 16.0, 8.0, 4.0, 2.0, 1.0]);
        assert_eq!(bisection.pass, None);
    }

    #[test]
    fn noisy_steps_near_the_knee_still_end_near_it() {
        // Within ±5% of the capacity a step passes or fails at random.
        for seed in 0..50 {
            let mut rng = crate::rng::Rng::new(seed);
            let cap = 3_700.0;
            let (bisection, tried) = search(100.0, None, &mut |r| {
                if (r - cap).abs() <= 0.05 * cap {
                    if rng.chance(0.5) {
                        Outcome::Pass
                    } else {
                        Outcome::Fail
                    }
                } else {
                    capacity(cap)(r)
                }
            });
            assert!(tried.len() <= 25, "seed {seed}: {} steps", tried.len());
            let pass = bisection.pass.unwrap();
            assert!((pass - cap).abs() <= 0.06 * cap, "seed {seed}: pass {pass}");
        }
    }

    #[test]
    fn a_step_budget_bounds_a_search_that_cannot_converge() {
        let mut bisection = Bisection::new(100.0, None, 0.0);
        let mut n = 0;
        while let Some(rate) = bisection.next() {
            n += 1;
            bisection.record(rate, if rate < 150.0 { Outcome::Pass } else { Outcome::Fail });
        }
        assert_eq!(n, MAX_STEPS);
        assert_eq!(bisection.end(), Some(End::StepBudget));
    }
}
