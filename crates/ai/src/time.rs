//! Timestamps: entries carry ISO-8601 UTC strings with milliseconds, messages Unix milliseconds.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Now as `2026-06-20T15:00:00.000Z`.
pub fn now_iso() -> String {
    ms_to_iso(now_ms())
}

/// Formats Unix milliseconds as ISO-8601 UTC with milliseconds, like JavaScript's
/// `Date.prototype.toISOString` (years 0..=9999).
pub fn ms_to_iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, rem) = (rem / 3_600_000, rem % 3_600_000);
    let (min, rem) = (rem / 60_000, rem % 60_000);
    let (s, milli) = (rem / 1000, rem % 1000);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fff]Z` (or `+00:00`) into Unix milliseconds.
pub fn iso_to_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || (b[10] != b'T' && b[10] != b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    // Digits only: `parse` would accept a sign (`T-1:00:00Z`), where V8's Date.parse gives NaN.
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let field = s.get(r)?;
        if !field.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        field.parse::<i64>().ok()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &s[19..];
    let mut millis = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let mut scaled = 0i64;
        for (i, c) in frac[..digits].bytes().enumerate() {
            if i < 3 {
                scaled = scaled * 10 + i64::from(c - b'0');
            }
        }
        for _ in digits..3 {
            scaled *= 10;
        }
        millis = scaled;
        rest = &frac[digits..];
    }
    if rest != "Z" && rest != "+00:00" {
        return None;
    }
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    Some(days * 86_400_000 + h * 3_600_000 + mi * 60_000 + sec * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trip() {
        for (ms, iso) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (1_733_234_401_000, "2024-12-03T14:00:01.000Z"),
            (951_782_400_123, "2000-02-29T00:00:00.123Z"),
        ] {
            assert_eq!(ms_to_iso(ms), iso);
            assert_eq!(iso_to_ms(iso), Some(ms));
        }
        assert_eq!(iso_to_ms("2024-12-03T14:00:01Z"), Some(1_733_234_401_000));
        assert_eq!(iso_to_ms("2024-12-03T14:00:01.5Z"), Some(1_733_234_401_500));
        assert_eq!(iso_to_ms("yesterday"), None);
        assert_eq!(iso_to_ms("2024-13-03T14:00:01.000Z"), None);
    }

    #[test]
    fn signs_in_numeric_fields_are_refused_like_v8() {
        // `new Date("2024-12-03T-1:00:01Z")` is an Invalid Date (NaN) in V8.
        for bad in [
            "2024-12-03T-1:00:01Z",
            "2024-12-03T+1:00:01Z",
            "2024-12-03T14:-0:01Z",
            "2024-12-03T14:00:+1Z",
            "2024--2-03T14:00:01Z",
            "2024-12-+3T14:00:01Z",
            "+024-12-03T14:00:01Z",
        ] {
            assert_eq!(iso_to_ms(bad), None, "{bad}");
        }
    }
}
