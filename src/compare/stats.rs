//! The statistics of `strain compare`, as pure functions: Welch's t interval over per-run
//! values (the runs are the evidence when each side has several), the Mann-Whitney U test (is
//! one run's series of per-interval values shifted against the other's?) and a seeded
//! bootstrap of the relative change of a statistic (how large is the shift within one run?).
//! No I/O, no clock; the only randomness is a [`Rng`] the caller seeds, so a comparison prints
//! the same interval every time.

use crate::rng::Rng;

/// The result of a two-sided Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: pairs (a, b) with a > b, ties counting one half.
    pub u: f64,
    /// The two-sided p-value (exact for small samples without ties, else the normal
    /// approximation with tie and continuity corrections).
    pub p: f64,
}

/// Samples up to this size (each) without ties get the exact distribution of U.
const EXACT_MAX: usize = 20;

/// The two-sided Mann-Whitney U test of `a` against `b`; `None` when either is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    // Rank the pooled values; tied values share their mean rank.
    let mut pooled: Vec<(f64, bool)> = a.iter().map(|&v| (v, true)).chain(b.iter().map(|&v| (v, false))).collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut rank_sum_a, mut tie_term, mut ties) = (0.0, 0.0, false);
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j + 1 < pooled.len() && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let group = (j - i + 1) as f64;
        let rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_a += rank * pooled[i..=j].iter().filter(|x| x.1).count() as f64;
        if group > 1.0 {
            ties = true;
            tie_term += group * group * group - group;
        }
        i = j + 1;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u = rank_sum_a - f1 * (f1 + 1.0) / 2.0;
    let mean = f1 * f2 / 2.0;
    let p = if !ties && n1 <= EXACT_MAX && n2 <= EXACT_MAX {
        exact_p(n1, n2, u.min(f1 * f2 - u) as usize)
    } else {
        let n = f1 + f2;
        let var = f1 * f2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
        if var <= 0.0 {
            // Every value is the same: nothing tells the samples apart.
            1.0
        } else {
            let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
            (2.0 * normal_upper(z)).min(1.0)
        }
    };
    Some(MannWhitney { u, p })
}

/// Two-sided exact p-value: 2 P(U <= u_low) for samples of n1 and n2 without ties.
fn exact_p(n1: usize, n2: usize, u_low: usize) -> f64 {
    // counts[n][u]: arrangements of (i of the first sample, n of the second) with U = u, built up
    // one element of the first sample at a time: f(i, n, u) = f(i-1, n, u-n) + f(i, n-1, u).
    let max_u = n1 * n2;
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![0.0; max_u + 1]).collect();
    for row in prev.iter_mut() {
        row[0] = 1.0;
    }
    for _ in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = (0..=n2).map(|_| vec![0.0; max_u + 1]).collect();
        for n in 0..=n2 {
            for u in 0..=max_u {
                let from_first = if u >= n { prev[n][u - n] } else { 0.0 };
                let from_second = if n > 0 { cur[n - 1][u] } else { 0.0 };
                cur[n][u] = from_first + from_second;
            }
        }
        prev = cur;
    }
    let counts = &prev[n2];
    let total: f64 = counts.iter().sum();
    let tail: f64 = counts[..=u_low.min(max_u)].iter().sum();
    (2.0 * tail / total).min(1.0)
}

/// P(Z > z) for a standard normal Z.
pub fn normal_upper(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function, to about 1e-7 relative (a Chebyshev fit, Numerical
/// Recipes' erfcc): p-values are compared with 0.01, so more digits would not change a verdict.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Which statistic sums up one side's per-interval values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    /// The median: robust to a stray interval (throughput, latency).
    Median,
    /// The mean: for error rates, where most intervals are 0 and the median would hide the rest.
    Mean,
}

impl Statistic {
    /// The statistic of `values` (0 when empty).
    pub fn of(self, values: &[f64]) -> f64 {
        if values.is_empty() {
            return 0.0;
        }
        match self {
            Statistic::Mean => values.iter().sum::<f64>() / values.len() as f64,
            Statistic::Median => {
                let mut v = values.to_vec();
                v.sort_by(f64::total_cmp);
                let mid = v.len() / 2;
                if v.len() % 2 == 1 {
                    v[mid]
                } else {
                    (v[mid - 1] + v[mid]) / 2.0
                }
            }
        }
    }
}

/// Welch's two-sample comparison of means (unequal variances): the difference `mean(b) -
/// mean(a)`, its standard error and the Welch-Satterthwaite degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// mean(b) - mean(a).
    pub diff: f64,
    /// Its standard error.
    pub se: f64,
    /// Degrees of freedom.
    pub df: f64,
}

impl Welch {
    /// Compares `a` with `b`; `None` unless each has two values or more.
    pub fn of(a: &[f64], b: &[f64]) -> Option<Welch> {
        if a.len() < 2 || b.len() < 2 {
            return None;
        }
        let (ma, va) = mean_var(a);
        let (mb, vb) = mean_var(b);
        let (qa, qb) = (va / a.len() as f64, vb / b.len() as f64);
        let se2 = qa + qb;
        let df = if se2 > 0.0 {
            se2 * se2 / (qa * qa / (a.len() - 1) as f64 + qb * qb / (b.len() - 1) as f64)
        } else {
            // No spread at all: as many degrees of freedom as the samples give.
            (a.len() + b.len() - 2) as f64
        };
        Some(Welch { diff: mb - ma, se: se2.sqrt(), df })
    }

    /// The two-sided `1 - alpha` confidence interval of the difference.
    pub fn interval(&self, alpha: f64) -> (f64, f64) {
        let half = t_quantile(self.df, 1.0 - alpha / 2.0) * self.se;
        (self.diff - half, self.diff + half)
    }
}

/// The two-sided p-value of Welch's t.
pub fn t_p_value(w: Welch) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if w.se == 0.0 {
        return if w.diff == 0.0 { 1.0 } else { 0.0 };
    }
    let t = (w.diff / w.se).abs();
    StudentsT::new(0.0, 1.0, w.df.max(1e-3)).map_or(1.0, |d| (2.0 * (1.0 - d.cdf(t))).clamp(0.0, 1.0))
}

/// Mean and sample variance (n - 1).
fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var)
}

/// The `p` quantile of Student's t with `df` degrees of freedom.
pub fn t_quantile(df: f64, p: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    // df is positive whenever a Welch comparison exists; the normal quantile is the limit.
    StudentsT::new(0.0, 1.0, df.max(1e-3)).map_or(f64::INFINITY, |t| t.inverse_cdf(p))
}

/// Resamples drawn for a confidence interval.
pub const BOOTSTRAP_ROUNDS: usize = 2000;

/// A 95% percentile-bootstrap confidence interval of the relative change of `stat` from `base`
/// to `new`, in percent; `None` when a side is empty or the base statistic is 0 in most
/// resamples (a change from nothing has no percentage).
pub fn bootstrap_change_pct(base: &[f64], new: &[f64], stat: Statistic, rng: &mut Rng) -> Option<(f64, f64)> {
    if base.is_empty() || new.is_empty() {
        return None;
    }
    let mut changes = Vec::with_capacity(BOOTSTRAP_ROUNDS);
    let (mut b, mut n) = (vec![0.0; base.len()], vec![0.0; new.len()]);
    for _ in 0..BOOTSTRAP_ROUNDS {
        resample(base, &mut b, rng);
        resample(new, &mut n, rng);
        let sb = stat.of(&b);
        if sb != 0.0 {
            changes.push((stat.of(&n) / sb - 1.0) * 100.0);
        }
    }
    if changes.len() < BOOTSTRAP_ROUNDS / 2 {
        return None;
    }
    changes.sort_by(f64::total_cmp);
    let at = |q: f64| changes[((changes.len() - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
}

/// Fills `out` with values drawn from `from` with replacement.
fn resample(from: &[f64], out: &mut [f64], rng: &mut Rng) {
    for slot in out.iter_mut() {
        *slot = from[rng.below(from.len() as u64) as usize];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn mann_whitney_matches_known_values() {
        let rows: &[(&[f64], &[f64], f64, f64)] = &[
            // Fully separated, 5 vs 5: exact p = 2/C(10,5) = 2/252.
            (&[1., 2., 3., 4., 5.], &[6., 7., 8., 9., 10.], 0.0, 2.0 / 252.0),
            // The same, the other way round: U is n1*n2, p is the same.
            (&[6., 7., 8., 9., 10.], &[1., 2., 3., 4., 5.], 25.0, 2.0 / 252.0),
            // Interleaved 3 vs 3 (1,3,5 vs 2,4,6): U = 3; P(U <= 3) = 7/20, two-sided 0.7.
            (&[1., 3., 5.], &[2., 4., 6.], 3.0, 0.7),
            // One vs one: p = 1 whichever is larger.
            (&[1.], &[2.], 0.0, 1.0),
            // Ties: normal approximation with tie and continuity corrections. a = 1,2,2,3;
            // b = 2,3,3,4: ranks 1,3,3,3,6,6,6,8, R_a = 13, U = 3, mean 8,
            // var = 16/12 * (9 - (24+24)/56) = 10.857, z = (5 - 0.5)/3.295 = 1.3657, p = 0.17203.
            (&[1., 2., 2., 3.], &[2., 3., 3., 4.], 3.0, 0.17203),
            // All equal: no evidence at all.
            (&[5., 5., 5.], &[5., 5.], 3.0, 1.0),
        ];
        for (a, b, u, p) in rows {
            let r = mann_whitney(a, b).unwrap();
            assert_eq!(r.u, *u, "{a:?} {b:?}");
            assert!(close(r.p, *p, 1e-4), "{a:?} {b:?}: p {} want {p}", r.p);
        }
        assert_eq!(mann_whitney(&[], &[1.0]), None);
    }

    #[test]
    fn large_samples_use_the_normal_approximation() {
        // 25 vs 25 fully separated: U = 0, mean 312.5, var = 625*51/12 = 2656.25,
        // z = (312.5 - 0.5)/51.539 = 6.0537, p = 2 * 7.1e-10.
        let a: Vec<f64> = (0..25).map(f64::from).collect();
        let b: Vec<f64> = (25..50).map(f64::from).collect();
        let r = mann_whitney(&a, &b).unwrap();
        assert_eq!(r.u, 0.0);
        assert!(r.p > 1.0e-9 && r.p < 2.0e-9, "{}", r.p);
    }

    #[test]
    fn normal_tail_matches_tables() {
        for (z, want) in [(0.0, 0.5), (1.0, 0.158_655), (1.959_964, 0.025), (2.575_829, 0.005), (-1.0, 0.841_345)] {
            assert!(close(normal_upper(z), want, 1e-6), "z {z}: {}", normal_upper(z));
        }
    }

    #[test]
    fn welch_matches_hand_worked_values() {
        // a = 1,2,3 (mean 2, var 1), b = 4,6,8 (mean 6, var 4): se^2 = 1/3 + 4/3 = 5/3,
        // df = (5/3)^2 / ((1/3)^2/2 + (4/3)^2/2) = 2.7778/(0.0556 + 0.8889) = 2.9412.
        let w = Welch::of(&[1., 2., 3.], &[4., 6., 8.]).unwrap();
        assert!(close(w.diff, 4.0, 1e-12) && close(w.se, (5.0f64 / 3.0).sqrt(), 1e-12), "{w:?}");
        assert!(close(w.df, 2.941_176, 1e-5), "{w:?}");
        assert_eq!(Welch::of(&[1.], &[1., 2.]), None);
        // Equal variances and sizes: df = 2n - 2, and the t table's 97.5% quantiles.
        let w = Welch::of(&[1., 2., 3., 4., 5.], &[2., 3., 4., 5., 6.]).unwrap();
        assert!(close(w.df, 8.0, 1e-12));
        let (lo, hi) = w.interval(0.05);
        let half = 2.306_004 * (2.5f64 / 5.0 * 2.0).sqrt();
        assert!(close(lo, 1.0 - half, 1e-5) && close(hi, 1.0 + half, 1e-5), "{lo} {hi}");
        for (df, p, want) in [(1.0, 0.975, 12.706_205), (4.0, 0.995, 4.604_095), (30.0, 0.95, 1.697_261)] {
            assert!(close(t_quantile(df, p), want, 1e-5), "df {df}: {}", t_quantile(df, p));
        }
    }

    #[test]
    fn statistics() {
        assert_eq!(Statistic::Median.of(&[3., 1., 2.]), 2.0);
        assert_eq!(Statistic::Median.of(&[4., 1., 2., 3.]), 2.5);
        assert_eq!(Statistic::Mean.of(&[1., 2., 6.]), 3.0);
        assert_eq!(Statistic::Median.of(&[]), 0.0);
    }

    #[test]
    fn bootstrap_brackets_the_change_and_repeats_with_its_seed() {
        // new is base + 10%: every resample's median ratio is near 1.10.
        let base: Vec<f64> = (0..30).map(|i| 1000.0 + f64::from(i % 7)).collect();
        let new: Vec<f64> = base.iter().map(|v| v * 1.1).collect();
        let (lo, hi) = bootstrap_change_pct(&base, &new, Statistic::Median, &mut Rng::new(7)).unwrap();
        assert!(lo > 9.0 && hi < 11.0 && lo <= hi, "{lo} {hi}");
        let again = bootstrap_change_pct(&base, &new, Statistic::Median, &mut Rng::new(7)).unwrap();
        assert_eq!((lo, hi), again);
        // Identical constant sides: the interval is exactly [0, 0].
        let same = [5.0; 10];
        assert_eq!(bootstrap_change_pct(&same, &same, Statistic::Median, &mut Rng::new(1)), Some((0.0, 0.0)));
        // A base of zeros has no relative change.
        assert_eq!(bootstrap_change_pct(&[0.0; 8], &[1.0; 8], Statistic::Mean, &mut Rng::new(1)), None);
    }
}
