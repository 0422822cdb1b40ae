//! wrk's number formatting, reproduced exactly because people parse wrk's output.
//!
//! A value moves to the next unit once it reaches 0.85 of that unit's scale (850 µs prints as
//! `0.85ms`), and each family stops at its last unit but one, as wrk's loop does: times never
//! exceed minutes, sizes never exceed terabytes.

struct Units {
    scale: f64,
    base: &'static str,
    units: &'static [&'static str],
}

const TIME_US: Units = Units { scale: 1000.0, base: "us", units: &["ms", "s"] };
const TIME_S: Units = Units { scale: 60.0, base: "s", units: &["m", "h"] };
const BINARY: Units = Units { scale: 1024.0, base: "", units: &["K", "M", "G", "T", "P"] };
const METRIC: Units = Units { scale: 1000.0, base: "", units: &["k", "M", "G", "T", "P"] };

fn format_units(n: f64, m: &Units, precision: usize) -> String {
    let mut amt = n;
    let mut unit = m.base;
    let threshold = m.scale * 0.85;
    // Like wrk, the last unit of each list is never reached.
    for u in &m.units[..m.units.len() - 1] {
        if amt < threshold {
            break;
        }
        amt /= m.scale;
        unit = u;
    }
    format!("{amt:.precision$}{unit}")
}

/// Bytes in powers of 1024 (`1.23M`; callers append `B`).
pub fn binary(n: f64) -> String {
    format_units(n, &BINARY, 2)
}

/// Counts in powers of 1000 (`1.00k`).
pub fn metric(n: f64) -> String {
    format_units(n, &METRIC, 2)
}

/// A duration given in microseconds (`850.00us`, `0.85ms`, `1.50s`, `2.00m`).
pub fn time_us(n: f64) -> String {
    if n >= 1_000_000.0 {
        format_units(n / 1_000_000.0, &TIME_S, 2)
    } else {
        format_units(n, &TIME_US, 2)
    }
}

/// A whole test duration in seconds (`10s`, `2m`, `120m`).
pub fn time_s(n: f64) -> String {
    format_units(n, &TIME_S, 0)
}

/// wrk's `format_time_us` for a whole number of microseconds, digit for digit as x86-64 Linux
/// computes it: in `long double` (64-bit significand), printed exactly and rounded half to even.
/// [`time_us`] divides in `f64`, which lands on the other side of a tie when the
/// microseconds end in 5: 27695 µs is `27.69ms` in wrk2 (the `long double` nearest 27.695 is
/// below it) but `27.70` through `f64`.
pub fn time_us_exact(us: u64) -> String {
    // wrk moves to the next unit at 0.85 of it and never past minutes.
    if us < 850 {
        format!("{us}.00us")
    } else if us < 1_000_000 {
        format!("{}ms", hundredths(div_x87(u128::from(us), 1000)))
    } else {
        let s = div_x87(u128::from(us), 1_000_000);
        if us < 51_000_000 {
            format!("{}s", hundredths(s))
        } else {
            // Dividing by a power of two is exact, so s / 60 rounds as its significand / 60.
            let m = div_x87(s.0, 60);
            format!("{}m", hundredths((m.0, m.1 + s.1)))
        }
    }
}

/// `num / den` rounded to nearest-even with a 64-bit significand, as `(significand, shift)`
/// meaning `significand / 2^shift`. `num` is below 2^64 and `den` at most 10^6, so every
/// intermediate fits in a u128.
fn div_x87(num: u128, den: u128) -> (u128, u32) {
    const LOW: u128 = 1 << 63;
    if num == 0 || den == 0 {
        return (0, 0);
    }
    let mut shift: u32 = 0;
    while (num << shift) / den < LOW {
        shift += 1;
    }
    let scaled = num << shift;
    let (mut q, r) = (scaled / den, scaled % den);
    if 2 * r > den || (2 * r == den && q % 2 == 1) {
        q += 1;
        if q == LOW << 1 {
            return (LOW, shift.saturating_sub(1));
        }
    }
    (q, shift)
}

/// The exact value `significand / 2^shift` with two decimals, ties to even (glibc's `%.2Lf`).
fn hundredths((significand, shift): (u128, u32)) -> String {
    let scaled = significand * 100;
    let mut whole = scaled >> shift;
    if shift > 0 {
        let rem = scaled & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        if rem > half || (rem == half && whole % 2 == 1) {
            whole += 1;
        }
    }
    format!("{}.{:02}", whole / 100, whole % 100)
}

/// wrk's column padding: a value right-aligned in `width`, with room for a two-letter unit;
/// shorter units give their unused letters back as trailing spaces. Unlike wrk, a value wider
/// than its column is not cut (wrk's `1000.00ms` becomes `1000.00m`, which reads as minutes).
pub fn padded(msg: &str, width: usize) -> String {
    let bytes = msg.as_bytes();
    let alpha = |k: usize| bytes.len() >= k && bytes[bytes.len() - k].is_ascii_alphabetic();
    let pad = 2 - usize::from(alpha(1)) - usize::from(alpha(2));
    let width = width.saturating_sub(pad);
    format!("{msg:>width$}{}", &"  "[..pad])
}

/// A number with `places` decimals and a thousands separator: `12,345.6`.
pub fn grouped(v: f64, places: usize) -> String {
    let text = format!("{:.places$}", v.abs());
    let (int, frac) = text.split_once('.').map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let mut out = String::with_capacity(text.len() + int.len() / 3 + 1);
    if v < 0.0 && text.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        out.push('-');
    }
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// A rate or count rounded to a whole number, with a thousands separator: `12,345`.
pub fn rate(r: f64) -> String {
    grouped(r.max(0.0), 0)
}

/// Times kept as a count, a sum and a maximum, as the reports say them: `1.20ms mean, 3.00ms max`.
pub fn mean_max(h: &crate::stats::Handshakes) -> String {
    format!("{} mean, {} max", time_us(h.mean_us()), time_us(h.us_max as f64))
}

/// The same in an HTML table's cell: `1,204 (1.20 ms, 3.00 ms)`.
pub fn count_mean_max(h: &crate::stats::Handshakes) -> String {
    format!("{} ({:.2} ms, {:.2} ms)", grouped(h.count as f64, 0), h.mean_us() / 1000.0, h.us_max as f64 / 1000.0)
}

/// A count of messages and their mean size: `1,000 (64 B)`.
pub fn messages(n: u64, bytes: u64) -> String {
    let mean = if n > 0 { bytes as f64 / n as f64 } else { 0.0 };
    format!("{} ({} B)", grouped(n as f64, 0), grouped(mean, 0))
}

/// Counts by name, `none` when there are none: `1000 12, 1001 3`.
pub fn by_name<K: std::fmt::Display>(m: &std::collections::BTreeMap<K, u64>) -> String {
    match m.is_empty() {
        true => "none".to_string(),
        false => m.iter().map(|(k, v)| format!("{k} {}", grouped(*v as f64, 0))).collect::<Vec<_>>().join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format_like_wrk_long_double() {
        // Expectations printed by wrk's own units.c on x86-64 Linux; this port agreed with it
        // on 4.1 million values (every one below 3 s and samples up to 10^12 µs). The f64
        // formatting gives the other answer on the ties marked.
        let rows: &[(u64, &str)] = &[
            (0, "0.00us"),
            (849, "849.00us"),
            (850, "0.85ms"),
            (855, "0.86ms"),     // f64: 0.85ms
            (885, "0.88ms"),     // f64: 0.89ms
            (27_625, "27.62ms"), // exact tie in binary: to even
            (27_695, "27.69ms"), // f64: 27.70ms
            (999_995, "999.99ms"),
            (1_000_000, "1.00s"),
            (1_065_000, "1.07s"), // f64: 1.06s
            (12_000_000, "12.00s"),
            (50_999_995, "51.00s"),
            (51_000_000, "0.85m"),
            (77_730_000, "1.30m"),
            (3_600_000_000, "60.00m"),
            (86_400_000_000, "1440.00m"),
            (i64::MAX as u64, "153722867280.91m"),
        ];
        for &(us, want) in rows {
            assert_eq!(time_us_exact(us), want, "{us}");
        }
        // Beyond C's int64 (where wrk prints -1.00us): whatever it prints, it must not panic.
        assert!(time_us_exact(u64::MAX).ends_with('m'));
    }

    #[test]
    fn units_switch_like_wrk() {
        type Format = fn(f64) -> String;
        let rows: &[(Format, f64, &str)] = &[
            (time_us, 849.0, "849.00us"),
            (time_us, 850.0, "0.85ms"),
            (time_us, 1_500.0, "1.50ms"),
            (time_us, 999_999.0, "1000.00ms"),
            (time_us, 1_500_000.0, "1.50s"),
            (time_us, 51_000_000.0, "0.85m"),
            (time_us, 7_200_000_000.0, "120.00m"),
            (time_s, 10.0, "10s"),
            (time_s, 120.0, "2m"),
            (time_s, 7200.0, "120m"),
            (time_s, 50.0, "50s"),
            (metric, 999.0, "1.00k"),
            (metric, 849.0, "849.00"),
            (metric, 12_345_678.0, "12.35M"),
            (binary, 900.0, "0.88K"),
            (binary, 1_290_000.0, "1.23M"),
            (binary, 5.0 * 1024.0f64.powi(5), "5120.00T"),
        ];
        for (f, n, want) in rows {
            assert_eq!(f(*n), *want, "{n}");
        }
    }

    #[test]
    fn padding_matches_wrk_columns() {
        assert_eq!(padded("1.23ms", 8), "  1.23ms");
        assert_eq!(padded("1.23s", 8), "  1.23s ");
        assert_eq!(padded("12.00", 8), " 12.00  ");
        assert_eq!(padded("1.00k", 9), "   1.00k ");
        // wrk cuts a value wider than its column ("1000.00m"); strain keeps it whole, since a
        // cut unit reads as another unit.
        assert_eq!(padded("1000.00ms", 8), "1000.00ms");
    }
}
