//! The timestamps recordings write, to microseconds since the Unix epoch: RFC 3339 (HAR, JSON
//! lines, Envoy, the AWS load balancers), the common log format's `26/Nov/2026:10:52:58 +0000`
//! (nginx `$time_local`, Apache `%t`, HAProxy's `%tr` with milliseconds), W3C's `date` and
//! `time` columns, and Unix seconds with a fraction (nginx `$msec`, ATS `cqtq`, Squid).

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian; Howard Hinnant's
/// `days_from_civil`, which needs no table and no loop).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Microseconds since the epoch of a UTC date and time of day.
fn epoch_us(year: i64, month: u32, day: u32, h: u32, m: u32, s: u32) -> Option<i64> {
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + i64::from(h * 3600 + m * 60 + s);
    secs.checked_mul(1_000_000)
}

/// The digits of `s` as a number (all of `s` must be ASCII digits).
fn num(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A `+hh:mm`, `+hhmm`, `-hh`, or `Z` offset, in seconds east of UTC.
fn offset_s(s: &str) -> Option<i64> {
    if s == "Z" || s == "z" {
        return Some(0);
    }
    let sign = match s.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    // Read on the bytes, without a copy: every line of a log has one.
    let digits = s.get(1..)?;
    let (h, m) = match (digits.len(), digits.as_bytes().get(2)) {
        (2, _) => (num(digits)?, 0),
        (4, _) => (num(digits.get(..2)?)?, num(digits.get(2..)?)?),
        (5, Some(b':')) => (num(digits.get(..2)?)?, num(digits.get(3..)?)?),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    Some(sign * i64::from(h * 3600 + m * 60))
}

/// A fraction of a second's digits (`123` of `.123`) in microseconds; digits past the sixth
/// are dropped.
fn fraction_us(digits: &str) -> Option<i64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut us: i64 = 0;
    for b in digits.bytes().chain(std::iter::repeat(b'0')).take(6) {
        us = us * 10 + i64::from(b - b'0');
    }
    Some(us)
}

/// RFC 3339 (`2026-11-26T10:52:58.123+01:00`, `…Z`); a space may stand for the `T`.
pub fn rfc3339_us(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.len() < 20 || !s.is_char_boundary(10) || !s.is_char_boundary(19) {
        return None;
    }
    let (date, rest) = s.split_at(10);
    let mut d = date.split('-');
    let (year, month, day) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
    if !matches!(rest.as_bytes()[0], b'T' | b't' | b' ') {
        return None;
    }
    let (clock, tail) = rest[1..].split_at(8);
    let mut c = clock.split(':');
    let (h, m, sec) = (num(c.next()?)?, num(c.next()?)?, num(c.next()?)?);
    let (frac, zone) = match tail.strip_prefix('.') {
        Some(t) => {
            let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            (fraction_us(&t[..end])?, &t[end..])
        }
        None => (0, tail),
    };
    let base = epoch_us(i64::from(year), month, day, h, m, sec)?;
    Some(base + frac - offset_s(zone)? * 1_000_000)
}

/// The common log format's time (`26/Nov/2026:10:52:58 +0000`, brackets allowed), and whether
/// it was written to the whole second: it may have a fraction and no zone (HAProxy's
/// `06/Feb/2009:12:14:14.655`, in the server's local time, read as UTC: the zone is not in the
/// log).
pub fn clf_time(s: &str) -> Option<(i64, bool)> {
    let s = s.trim().trim_start_matches('[').trim_end_matches(']');
    if let Some(us) = clf_exact(s.as_bytes()) {
        return Some((us, true));
    }
    let (stamp, zone) = s.split_once(' ').unwrap_or((s, "+0000"));
    let mut parts = stamp.splitn(4, [':', '/']);
    let day = num(parts.next()?)?;
    let month = month_number(parts.next()?)?;
    let year = num(parts.next()?)?;
    let mut c = parts.next()?.split(':');
    let (h, m) = (num(c.next()?)?, num(c.next()?)?);
    let seconds_text = c.next()?;
    let (sec, frac) = seconds(seconds_text)?;
    if c.next().is_some() {
        return None;
    }
    let us = epoch_us(i64::from(year), month, day, h, m, sec)? + frac - offset_s(zone)? * 1_000_000;
    Some((us, !seconds_text.contains('.')))
}

/// The time of `26/Nov/2026:10:52:58 +0100`, the shape nginx and Apache write on every line,
/// read at fixed offsets: the general reading (split, parse) was a third of reading a combined
/// log, and this shape is nearly every line there is. Anything else gives `None`.
fn clf_exact(b: &[u8]) -> Option<i64> {
    let &[d1, d2, b'/', m1, m2, m3, b'/', y1, y2, y3, y4, b':', h1, h2, b':', i1, i2, b':', s1, s2, b' ', sign, z1, z2, z3, z4] =
        b
    else {
        return None;
    };
    let two = |a: u8, b: u8| {
        (a.is_ascii_digit() && b.is_ascii_digit()).then(|| u32::from(a - b'0') * 10 + u32::from(b - b'0'))
    };
    let month = month_number(std::str::from_utf8(&[m1, m2, m3]).ok()?)?;
    let year = two(y1, y2)? * 100 + two(y3, y4)?;
    let zone = i64::from(two(z1, z2)? * 3600 + two(z3, z4)? * 60);
    let zone = match sign {
        b'+' => zone,
        b'-' => -zone,
        _ => return None,
    };
    let us = epoch_us(i64::from(year), month, two(d1, d2)?, two(h1, h2)?, two(i1, i2)?, two(s1, s2)?)?;
    Some(us - zone * 1_000_000)
}

/// Seconds with an optional fraction (`58`, `58.655`): the whole seconds, and the fraction in µs.
fn seconds(s: &str) -> Option<(u32, i64)> {
    match s.split_once('.') {
        Some((whole, frac)) => Some((num(whole)?, fraction_us(frac)?)),
        None => Some((num(s)?, 0)),
    }
}

/// A W3C extended log's `date` and `time` columns (`2019-07-12`, `00:00:01`, a fraction
/// allowed), which the format writes in UTC.
pub fn w3c_us(date: &str, time: &str) -> Option<i64> {
    let mut d = date.split('-');
    let (year, month, day) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
    let mut c = time.split(':');
    let (h, m) = (num(c.next()?)?, num(c.next()?)?);
    let (sec, frac) = seconds(c.next()?)?;
    if d.next().is_some() || c.next().is_some() || year < 1000 {
        return None;
    }
    Some(epoch_us(i64::from(year), month, day, h, m, sec)? + frac)
}

/// Unix seconds with an optional fraction (`1732612345.123`).
pub fn epoch_seconds_us(s: &str) -> Option<i64> {
    let s = s.trim();
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let secs: i64 =
        if whole.bytes().all(|b| b.is_ascii_digit()) && !whole.is_empty() { whole.parse().ok()? } else { return None };
    let frac = if frac.is_empty() { 0 } else { fraction_us(frac)? };
    secs.checked_mul(1_000_000)?.checked_add(frac)
}

/// `Jan` … `Dec` as 1 … 12.
fn month_number(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    MONTHS.iter().position(|m| m.eq_ignore_ascii_case(name)).map(|i| i as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The time alone.
    fn clf_us(s: &str) -> Option<i64> {
        clf_time(s).map(|(us, _)| us)
    }

    #[test]
    fn formats_agree_on_one_instant() {
        // 2026-11-26T10:52:58Z is 1795690378 s after the epoch.
        let at = 1_795_690_378_000_000;
        assert_eq!(rfc3339_us("2026-11-26T10:52:58Z"), Some(at));
        assert_eq!(rfc3339_us("2026-11-26T11:52:58.250+01:00"), Some(at + 250_000));
        assert_eq!(rfc3339_us("2026-11-26 10:52:58.000001Z"), Some(at + 1));
        assert_eq!(clf_us("[26/Nov/2026:10:52:58 +0000]"), Some(at));
        assert_eq!(clf_us("26/Nov/2026:05:52:58 -0500"), Some(at));
        assert_eq!(epoch_seconds_us("1795690378.123"), Some(at + 123_000));
        assert_eq!(epoch_seconds_us("1795690378"), Some(at));
        assert_eq!(w3c_us("2026-11-26", "10:52:58"), Some(at));
        assert_eq!(w3c_us("2026-11-26", "10:52:58.5"), Some(at + 500_000));
    }

    #[test]
    fn any_offset_and_fractions() {
        let at = 1_795_690_378_000_000;
        assert_eq!(clf_us("26/Nov/2026:16:22:58 +0530"), Some(at));
        assert_eq!(clf_us("26/Nov/2026:00:07:58 -1045"), Some(at));
        assert_eq!(clf_us("26/Nov/2026:10:52:58.655"), Some(at + 655_000));
        assert_eq!(clf_us("[26/Nov/2026:11:52:58.000123 +0100]"), Some(at + 123));
        assert_eq!(rfc3339_us("2026-11-26T22:52:58.123456789+12:00"), Some(at + 123_456));
        assert_eq!(rfc3339_us("2026-11-26T06:22:58-04:30"), Some(at));
        assert_eq!(clf_us("26/Nov/2026:10:52:58."), None);
        assert_eq!(w3c_us("26-11-2026", "10:52:58"), None);
    }

    #[test]
    fn nonsense_is_none() {
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-11-26T10:52:58",
            "26/Foo/2026:10:52:58 +0000",
            "32/Nov/2026:10:52:58 +0000",
            "26/Nov/2026:24:52:58 +0000",
            "2a/Nov/2026:10:52:58 +0000",
            "26/Nov/2026:10:52:58 *0000",
            "26/Nov/2026:10:52:58 +00a0",
            "26-Nov-2026:10:52:58 +0000",
            "12a.5",
            "2026-11-26T10:52:58+25:00",
        ] {
            assert_eq!(rfc3339_us(bad).or(clf_us(bad)).or(epoch_seconds_us(bad)), None, "{bad}");
        }
    }
}
