//! Number and text formatting for pages: every number a page shows is formatted here, once,
//! into the view model (templates only interpolate). Fixed precision, no locale, so output is
//! byte-stable.

/// What a page shows for a value that was not measured.
pub const NOT_MEASURED: &str = "not measured";
/// What a page shows for a value that does not exist (no correct candidate, k > n, ...).
pub const NONE: &str = "—";

/// `0.75` → `75.0%`.
pub fn percent(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// `Some(0.75)` → `75.0%`, `None` → [`NONE`].
pub fn opt_percent(x: Option<f64>) -> String {
    x.map_or_else(|| NONE.to_string(), percent)
}

/// A speedup: [`ratio`] with `×`: `1.234` → `1.23×`.
pub fn speedup(x: f64) -> String {
    if !x.is_finite() {
        return NONE.to_string();
    }
    let mut s = ratio(x);
    s.push('×');
    s
}

/// A ratio in plain notation: three significant digits from 0.1 up (`0.845`, `1.23`,
/// `12.3`, `123`), two below (`0.0090`), whole numbers with thousands separators from 1000
/// (`1,234`). Never an exponent.
pub fn ratio(x: f64) -> String {
    if !x.is_finite() {
        return NONE.to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let a = x.abs();
    if a >= 999.5 {
        return grouped(x.round(), 0);
    }
    let digits = if a >= 0.1 { 3 } else { 2 };
    significant(x, digits)
}

/// `x` with `decimals` decimals and thousands separators in its whole part:
/// `1234567.5, 1` → `1,234,567.5`.
pub fn grouped(x: f64, decimals: usize) -> String {
    group(&format!("{:.decimals$}", x.abs()), x < 0.0)
}

/// `text`, the plain digits of a number's magnitude (`1234.5`), with thousands separators in
/// its whole part and a minus sign when `negative` and it does not read as zero.
fn group(text: &str, negative: bool) -> String {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let mut out = String::with_capacity(text.len() + whole.len() / 3 + 1);
    if negative && text.bytes().any(|c| c.is_ascii_digit() && c != b'0') {
        out.push('-');
    }
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// A count with thousands separators: `58720256` → `58,720,256`.
pub fn count(n: u64) -> String {
    group(&n.to_string(), false)
}

pub fn opt_speedup(x: Option<f64>) -> String {
    x.map_or_else(|| NONE.to_string(), speedup)
}

/// A 95% interval of a speedup: `[0.8213, 0.8642]` → `95% CI 0.821–0.864`.
pub fn interval(ci: [f64; 2]) -> String {
    let [lo, hi] = ci;
    if !lo.is_finite() || !hi.is_finite() {
        return NONE.to_string();
    }
    format!("95% CI {}–{}", ratio(lo), ratio(hi))
}

/// Milliseconds with three significant digits: `0.05080` → `0.0508 ms`.
pub fn millis(x: f64) -> String {
    if !x.is_finite() {
        return NONE.to_string();
    }
    let mut s = significant(x, 3);
    s.push_str(" ms");
    s
}

/// `x` with `digits` significant digits, plain notation.
pub fn significant(x: f64, digits: i32) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).clamp(0, 12) as usize;
    let text = format!("{:.decimals$}", x.abs());
    // Rounding can add a digit (9.996 → 10.00): one decimal fewer then.
    let shown = text.trim_start_matches("0.").trim_start_matches('0');
    let sig = shown.bytes().filter(u8::is_ascii_digit).count();
    if sig > digits as usize && decimals > 0 {
        let d = decimals - 1;
        return grouped(x, d);
    }
    // Most values a page shows are positive and under 1000: nothing to group, no sign.
    if x > 0.0 && text.find('.').unwrap_or(text.len()) <= 3 {
        return text;
    }
    group(&text, x < 0.0)
}

/// TFLOP/s with one decimal.
pub fn tflops(x: f64) -> String {
    if !x.is_finite() {
        return NONE.to_string();
    }
    format!("{x:.1} TFLOP/s")
}

/// A count of bytes: `1536` → `1.5 KiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// `c` of `n` with the rate: `9/12 (75.0%)`.
pub fn count_rate(c: u32, n: u32) -> String {
    if n == 0 {
        return NONE.to_string();
    }
    format!(
        "{}/{} ({})",
        count(u64::from(c)),
        count(u64::from(n)),
        percent(f64::from(c) / f64::from(n))
    )
}

/// A value for a `data-v` sort key: numbers in plain notation, absent values empty (sorted
/// last by the page script).
pub fn sort_key(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.6}"),
        _ => String::new(),
    }
}

/// An error metric: three significant digits in plain notation from 0.001 to below
/// 10,000 (`1.00`, `0.00162`), an exponent outside that range only (`1.62e-7`).
pub fn scientific(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => {
            let a = v.abs();
            if v == 0.0 {
                "0".to_string()
            } else if (0.001..10_000.0).contains(&a) {
                significant(v, 3)
            } else {
                format!("{v:.2e}")
            }
        }
        Some(_) => "non-finite".to_string(),
        None => NONE.to_string(),
    }
}

/// The first line of `s`, cut to `n` characters with an ellipsis.
pub fn shorten_line(s: &str, n: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    let cut = line.chars().count() > n || s.lines().nth(1).is_some();
    let mut out: String = line.chars().take(n).collect();
    if cut {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_fixed() {
        assert_eq!(percent(0.75), "75.0%");
        assert_eq!(speedup(1.01155693), "1.01×");
        assert_eq!(speedup(0.0012), "0.0012×");
        assert_eq!(speedup(0.0123), "0.012×");
        assert_eq!(speedup(12.34), "12.3×");
        assert_eq!(millis(0.05079999938607216), "0.0508 ms");
        assert_eq!(millis(7.99), "7.99 ms");
        assert_eq!(millis(123.4), "123 ms");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(12), "12 B");
        assert_eq!(count_rate(9, 12), "9/12 (75.0%)");
        assert_eq!(sort_key(None), "");
        assert_eq!(scientific(Some(0.0016243996)), "0.00162");
        assert_eq!(scientific(Some(1.0)), "1.00");
        assert_eq!(scientific(Some(1.6e-7)), "1.60e-7");
        assert_eq!(tflops(818.04), "818.0 TFLOP/s");
    }

    #[test]
    fn ratios_have_two_or_three_significant_digits_and_no_exponent() {
        assert_eq!(speedup(0.0090), "0.0090×");
        assert_eq!(speedup(0.02), "0.020×");
        assert_eq!(speedup(0.8412), "0.841×");
        assert_eq!(speedup(0.1), "0.100×");
        assert_eq!(speedup(1.0), "1.00×");
        assert_eq!(speedup(9.996), "10.0×");
        assert_eq!(speedup(99.96), "100×");
        assert_eq!(speedup(123.4), "123×");
        assert_eq!(speedup(1234.4), "1,234×");
        assert_eq!(speedup(0.000012), "0.000012×");
        assert_eq!(speedup(f64::NAN), NONE);
        assert_eq!(ratio(0.0), "0");
        assert_eq!(interval([0.8213, 0.8642]), "95% CI 0.821–0.864");
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(count(58720256), "58,720,256");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(0), "0");
        assert_eq!(grouped(-1234.5, 1), "-1,234.5");
        assert_eq!(grouped(-0.01, 1), "0.0");
        assert_eq!(significant(12345.6, 3), "12,346");
        assert_eq!(millis(1234.4), "1,234 ms");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(significant(-0.00040013, 3), "-0.000400");
        assert_eq!(significant(-9.996, 3), "-10.0");
        assert_eq!(significant(-1234.4, 2), "-1,234");
    }
}
