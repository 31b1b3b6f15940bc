//! JavaScript string semantics the reference's numbers depend on (DECISIONS §6.2c, §21.1):
//! lengths in UTF-16 code units, `JSON.stringify` output, default `Array.prototype.sort` order
//! and cutting a string without splitting a surrogate pair.

use std::cmp::Ordering;

use serde_json::Value;

/// `s.length` in JavaScript: UTF-16 code units. ASCII (the common case) is its byte length.
pub fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char::len_utf16).sum()
}

/// JavaScript's default sort order for strings: by UTF-16 code units (differs from Rust's
/// byte order for characters above U+FFFF against U+E000..U+FFFF).
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The first `max_units` UTF-16 units of `s` (whole characters only: a pair that would be cut
/// in half is left out), as a byte index into `s`.
pub fn utf16_prefix_end(s: &str, max_units: usize) -> usize {
    if s.is_ascii() {
        return max_units.min(s.len());
    }
    let mut units = 0usize;
    for (i, c) in s.char_indices() {
        let w = c.len_utf16();
        if units + w > max_units {
            return i;
        }
        units += w;
    }
    s.len()
}

/// `JSON.stringify(value)` (serde_json keeps object key order, as JavaScript does).
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// `JSON.stringify(value).length` without building the string for plain ASCII values.
pub fn stringify_len(value: &Value) -> usize {
    utf16_len(&stringify(value))
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, v);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, v);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    if n.is_i64() || n.is_u64() {
        out.push_str(&n.to_string());
        return;
    }
    match n.as_f64() {
        Some(f) => out.push_str(&js_number(f)),
        None => out.push_str(&n.to_string()),
    }
}

/// `String(f)` for a finite double: the shortest round-trip digits, laid out in plain
/// decimal for exponents in `[-7, 21)` and as `d.ddde±x` otherwise.
pub fn js_number(f: f64) -> String {
    if !f.is_finite() {
        return "null".to_string();
    }
    if f == 0.0 {
        return "0".to_string();
    }
    // `{:e}` gives the shortest round-trip digits: "1.2345e20", "-5e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp + 1; // position of the decimal point relative to the digits
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e_sign = if e >= 0 { "+" } else { "-" };
        if k == 1 {
            format!("{digits}e{e_sign}{}", e.abs())
        } else {
            format!("{}.{}e{e_sign}{}", &digits[..1], &digits[1..], e.abs())
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_print_like_javascript() {
        for (f, js) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (-0.25, "-0.25"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (0.000001, "0.000001"),
            (100.0, "100"),
            (0.1, "0.1"),
        ] {
            assert_eq!(js_number(f), js, "{f}");
        }
    }

    #[test]
    fn stringify_matches_json_stringify() {
        let v = json!({"b": [1, 2.5, null, true], "a": "x\"\n\u{1}é😀"});
        assert_eq!(
            stringify(&v),
            "{\"b\":[1,2.5,null,true],\"a\":\"x\\\"\\n\\u0001é😀\"}"
        );
        // é is one unit, 😀 two.
        assert_eq!(stringify_len(&json!("é😀")), 2 + 1 + 2);
    }

    #[test]
    fn utf16_helpers() {
        assert_eq!(utf16_len("a😀"), 3);
        assert_eq!(utf16_prefix_end("a😀b", 2), 1);
        assert_eq!(utf16_prefix_end("a😀b", 3), 5);
        assert_eq!(utf16_cmp("\u{ffff}", "😀"), Ordering::Greater);
    }
}
