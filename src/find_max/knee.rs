//! The knee of a latency-vs-rate curve: where latency stops being flat and starts to climb.
//! Found as the point farthest below the straight line from the first point to the last, with
//! both axes scaled to 0-1 (the "Kneedle" idea); pure, on (rate, latency) points. A curve whose
//! highest latency is under [`TURN`] times its lowest has no knee: scaled to 0-1, noise on a
//! flat curve would bend it anywhere, and "latency turns up" would be false. The curve starts
//! at its first point within [`FLAT`] of its lowest, and has no knee if latency after the bend
//! stays under [`TURN`] times the bend's: a slow first step (a cold server, a busy machine) is
//! not latency climbing.

/// Latency must reach this multiple of its lowest value on the curve, and of the knee's own
/// after it, for a knee to exist.
pub const TURN: f64 = 2.0;
/// Latency within this multiple of the lowest is the flat part: passing steps on a flat curve
/// vary by 15-20% on a busy machine, and starting at the lowest point alone would leave no
/// flat part to bend from when that point is the last before the climb.
pub const FLAT: f64 = 1.25;

/// The point at the knee, if the curve bends upward at all.
pub fn knee(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Latency well above the lowest before it is not the flat part the bend leaves: the curve
    // starts where it is first flat.
    let lowest = pts.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    let flat = pts.iter().position(|p| p.1 <= FLAT * lowest).unwrap_or(0);
    pts.drain(..flat);
    if pts.len() < 3 {
        return None;
    }
    let (x0, x1) = (pts[0].0, pts[pts.len() - 1].0);
    let (y0, y1) = pts.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
    if x1 <= x0 || y1 <= y0 || y1 < TURN * y0 {
        return None;
    }
    let norm = |p: &(f64, f64)| ((p.0 - x0) / (x1 - x0), (p.1 - y0) / (y1 - y0));
    let (first, last) = (norm(&pts[0]), norm(&pts[pts.len() - 1]));
    let slope = (last.1 - first.1) / (last.0 - first.0);
    // How far each point lies below the chord; the knee is the farthest, if any lies below.
    let (i, gap) = pts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (x, y) = norm(p);
            (i, first.1 + slope * (x - first.0) - y)
        })
        .fold((0, 0.0), |best, cur| if cur.1 > best.1 { cur } else { best });
    let climbs = pts[i + 1..].iter().any(|p| p.1 >= TURN * pts[i].1);
    (gap > 0.0 && climbs).then_some(pts[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hockey_stick_bends_at_its_corner() {
        // Flat at 4 ms up to 2,000 req/s, then queueing.
        let pts = [(250.0, 4.0), (500.0, 4.0), (1_000.0, 4.1), (2_000.0, 5.0), (2_250.0, 80.0), (4_000.0, 900.0)];
        assert_eq!(knee(&pts), Some((2_000.0, 5.0)));
    }

    #[test]
    fn no_knee_without_a_bend_or_enough_points() {
        assert_eq!(knee(&[(1.0, 1.0), (2.0, 2.0)]), None);
        assert_eq!(knee(&[(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]), None);
        assert_eq!(knee(&[(1.0, 5.0), (2.0, 5.0), (3.0, 5.0)]), None);
        // A flat curve with noise (4.2-4.9 ms passing steps below --max) does not turn up.
        assert_eq!(knee(&[(250.0, 4.2), (500.0, 4.3), (1_000.0, 4.25), (2_000.0, 4.9)]), None);
        // Concave: latency rises early and flattens; nothing lies below the chord.
        assert_eq!(knee(&[(1.0, 1.0), (2.0, 9.0), (3.0, 10.0)]), None);
        // A slow first step over a flat rest (a cold start): the low point is no knee, as
        // nothing after it climbs.
        assert_eq!(knee(&[(100.0, 11.41), (200.0, 4.80), (400.0, 5.28)]), None);
        assert_eq!(knee(&[(100.0, 11.0), (200.0, 4.8), (400.0, 5.3), (800.0, 12.0)]), Some((400.0, 5.3)));
    }

    #[test]
    fn the_lowest_point_last_before_the_climb_is_the_knee() {
        // A CI run's p99 (ms): flat at 5.4-5.6 ms, lowest just before the capacity of 1,000/s.
        let pts = [
            (248.0, 5.58),
            (496.0, 5.39),
            (992.0, 5.37),
            (1_984.0, 1_040.0),
            (1_488.0, 689.15),
            (1_240.0, 409.86),
            (1_116.0, 222.59),
            (1_054.0, 113.53),
            (1_023.0, 53.34),
            (1_039.0, 83.97),
        ];
        assert_eq!(knee(&pts), Some((992.0, 5.37)));
    }
}
