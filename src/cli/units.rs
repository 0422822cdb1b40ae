//! Parsers for wrk-style values: durations (`500ms`, `10`, `10s`, `2m`, `1h`) and counts (`10k`).

use std::time::Duration;

/// A duration as a flag takes and shows it: its `Display` (`10s`, `1ms`) lets the help print a
/// default that is held as a [`Duration`] constant in [`crate::defaults`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl std::fmt::Display for Dur {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

/// Parses a flag's duration (see [`duration`]).
pub fn dur(s: &str) -> Result<Dur, String> {
    duration(s).map(Dur)
}

/// Parses `I/N`, a segment of a split test (0 <= I < N).
pub fn segment(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("'{s}' is not a segment: write I/N with 0 <= I < N, e.g. 0/3");
    let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// Parses a wall-clock instant: RFC 3339 (`2026-11-23T15:00:00Z`) or unix seconds.
pub fn instant(s: &str) -> Result<std::time::SystemTime, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if (0.0..1e11).contains(&secs) {
            return Ok(std::time::UNIX_EPOCH + Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_rfc3339_weak(t)
        .map_err(|_| format!("'{s}' is not a time: write RFC 3339 (2026-11-23T15:00:00Z) or unix seconds"))
}

/// Parses a percentage (`2%` or `2`) into a share (0.02).
pub fn percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    match t.strip_suffix('%').unwrap_or(t).trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p < 100.0 => Ok(p / 100.0),
        _ => Err(format!("'{s}' is not a percentage above 0% and below 100%")),
    }
}

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

/// Where `strain origin` listens: a TCP address, or `unix:PATH` for a Unix-domain socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP address.
    Tcp(std::net::SocketAddr),
    /// A Unix-domain socket's path.
    Unix(std::path::PathBuf),
}

impl std::fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenAddr::Tcp(a) => write!(f, "{a}"),
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// `127.0.0.1:8080`, `[::1]:0` or `unix:/run/app.sock`.
pub fn listen(s: &str) -> Result<ListenAddr, String> {
    match s.strip_prefix("unix:") {
        Some("") => Err("a Unix socket needs a path: unix:PATH".into()),
        Some(path) => Ok(ListenAddr::Unix(path.into())),
        None => s.parse().map(ListenAddr::Tcp).map_err(|_| "expected IP:PORT or unix:PATH".into()),
    }
}

/// `--rounds`: a number of rounds, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundsArg {
    /// Exactly this many.
    Fixed(u32),
    /// Until decided.
    Auto,
}

/// Parses `--rounds N|auto`.
pub fn rounds(s: &str) -> Result<RoundsArg, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(RoundsArg::Auto);
    }
    match s.parse::<u32>() {
        Ok(n) if n >= 2 => Ok(RoundsArg::Fixed(n)),
        Ok(_) => Err("at least 2 rounds: one run a side cannot tell a change from run-to-run noise".into()),
        Err(_) => Err(format!("expected a number of rounds or 'auto', found '{s}'")),
    }
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

/// Parses a byte rate per connection: a whole number of bytes per second above 0, suffixes
/// k, M, G (thousands), written `10k`, `10kB/s` or `10KB` alike.
pub fn byte_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let t = t.strip_suffix(['B', 'b']).unwrap_or(t);
    match count(t) {
        Ok(n) if n > 0 => Ok(n as u64),
        _ => Err(format!("'{s}' is not a byte rate (bytes per second above 0, like 1k, 10kB/s or 1M)")),
    }
}

/// Parses a request rate: a positive number, fractions allowed (`0.5`), metric suffix allowed.
pub fn rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'M')) => (&t[..i], 1e6),
        _ => (t, 1.0),
    };
    match num.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 && n * mult <= 1e9 => Ok(n * mult),
        _ => Err(format!("'{s}' is not a rate (a number of requests per second above 0, like 2000 or 0.5)")),
    }
}

/// The stages of `--stages`, one value for clap.
#[derive(Debug, Clone, PartialEq)]
pub struct StageList(pub Vec<crate::schedule::Stage>);

/// Parses `--stages`: comma-separated `DURATION:RATE`.
pub fn stages(s: &str) -> Result<StageList, String> {
    s.split(',')
        .map(|part| {
            let (d, r) =
                part.split_once(':').ok_or_else(|| format!("stage '{part}' must be DURATION:RATE, like 30s:1000"))?;
            Ok(crate::schedule::Stage {
                duration: duration(d)?,
                rate_per_s: if r.trim() == "0" { 0.0 } else { rate(r)? },
            })
        })
        .collect::<Result<Vec<_>, String>>()
        .and_then(|v| {
            if v.iter().all(|st| st.duration.is_zero()) {
                Err("the stages add up to no time at all".to_string())
            } else {
                Ok(StageList(v))
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_and_instants_parse() {
        assert_eq!(segment("0/3"), Ok((0, 3)));
        assert_eq!(segment(" 2 / 3 "), Ok((2, 3)));
        for bad in ["3/3", "1/0", "a/2", "1", "-1/2"] {
            assert!(segment(bad).is_err(), "{bad}");
        }
        assert_eq!(instant("1700000000"), Ok(std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
        assert_eq!(instant("2023-11-14T22:13:20Z"), Ok(std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
        assert!(instant("tomorrow").is_err());
    }

    #[test]
    fn rates_and_stages() {
        assert_eq!(rate("2000"), Ok(2000.0));
        assert_eq!(rate("0.5"), Ok(0.5));
        assert_eq!(rate("20k"), Ok(20_000.0));
        for bad in ["0", "-1", "fast", "nan", "inf"] {
            assert!(rate(bad).is_err(), "{bad}");
        }
        let st = stages("10s:1000,0s:5000,30s:5k").unwrap().0;
        assert_eq!(st.len(), 3);
        assert_eq!((st[0].duration, st[0].rate_per_s), (Duration::from_secs(10), 1000.0));
        assert_eq!((st[1].duration, st[2].rate_per_s), (Duration::ZERO, 5000.0));
        assert_eq!(stages("5s:0").unwrap().0[0].rate_per_s, 0.0);
        assert_eq!(stages("10s").unwrap_err(), "stage '10s' must be DURATION:RATE, like 30s:1000");
        assert!(stages("10s:x").is_err());
        assert!(stages("0s:100").is_err());
    }

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
    fn byte_rates() {
        assert_eq!(byte_rate("1k"), Ok(1_000));
        assert_eq!(byte_rate("10kB/s"), Ok(10_000));
        assert_eq!(byte_rate("1M"), Ok(1_000_000));
        assert_eq!(byte_rate("512"), Ok(512));
        for bad in ["0", "0k", "-1", "fast", "1.5k", ""] {
            assert_eq!(
                byte_rate(bad),
                Err(format!("'{bad}' is not a byte rate (bytes per second above 0, like 1k, 10kB/s or 1M)"))
            );
        }
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
