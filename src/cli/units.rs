//! Parsers for wrk-style values: durations (`500ms`, `10`, `10s`, `2m`, `1h`) and counts (`10k`).

use std::time::Duration;

/// Parses a duration; a bare number is seconds, as in wrk.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("'{s}' is not a duration (try 500ms, 10s, 2m or 1h)"))?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "us" => 0.000_001,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("'{s}' has an unknown unit '{unit}' (use ms, s, m or h)")),
    };
    let secs = n * scale;
    if !secs.is_finite() || secs > 365.0 * 86400.0 {
        return Err(format!("'{s}' is too long"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a count with an optional metric suffix (`k`, `M`, `G`), as wrk accepts for `-c`.
pub fn count(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000),
        Some((i, 'g' | 'G')) => (&t[..i], 1_000_000_000),
        _ => (t, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("'{s}' is not a whole number (suffixes k, M, G allowed)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ok = [("500ms", 500), ("10", 10_000), ("10s", 10_000), ("2m", 120_000), ("1h", 3_600_000), ("1.5s", 1_500)];
        for (s, ms) in ok {
            assert_eq!(duration(s), Ok(Duration::from_millis(ms)), "{s}");
        }
        assert_eq!(duration("10x"), Err("'10x' has an unknown unit 'x' (use ms, s, m or h)".into()));
        assert_eq!(duration("fast"), Err("'fast' is not a duration (try 500ms, 10s, 2m or 1h)".into()));
        assert_eq!(duration(""), Err("'' is not a duration (try 500ms, 10s, 2m or 1h)".into()));
        assert!(duration("99999999h").is_err());
    }

    #[test]
    fn counts() {
        assert_eq!(count("10"), Ok(10));
        assert_eq!(count("10k"), Ok(10_000));
        assert_eq!(count("1M"), Ok(1_000_000));
        assert_eq!(count("-1"), Err("'-1' is not a whole number (suffixes k, M, G allowed)".into()));
        assert!(count("99999999999999999999G").is_err());
    }
}
