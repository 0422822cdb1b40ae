//! HTTP dates (IMF-fixdate), written without allocating: the origin stamps `Last-Modified` on
//! every document response and the client sends the same date in `If-Modified-Since`.

/// Appends Unix time `secs` as an IMF-fixdate (`Wed, 01 Jan 2020 00:00:00 GMT`, RFC 9110 5.6.7).
pub fn write(secs: u64, out: &mut Vec<u8>) {
    const DAYS: [&[u8]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
    const MONTHS: [&[u8]; 12] =
        [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];
    let days = secs / 86_400;
    let time = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    // 1970-01-01 was a Thursday.
    out.extend_from_slice(DAYS[(days % 7) as usize]);
    out.extend_from_slice(b", ");
    push_2(out, day);
    out.push(b' ');
    out.extend_from_slice(MONTHS[(month - 1) as usize]);
    out.push(b' ');
    super::push_u64(out, year);
    out.push(b' ');
    push_2(out, time / 3600);
    out.push(b':');
    push_2(out, time / 60 % 60);
    out.push(b':');
    push_2(out, time % 60);
    out.extend_from_slice(b" GMT");
}

/// Two digits, zero-padded.
fn push_2(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(&[b'0' + (n / 10 % 10) as u8, b'0' + (n % 10) as u8]);
}

/// (year, month 1-12, day 1-31) of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
pub fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}
