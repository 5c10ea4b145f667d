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

/// A speedup: `1.234` → `1.23×` (three significant digits below 10).
pub fn speedup(x: f64) -> String {
    if !x.is_finite() {
        return NONE.to_string();
    }
    if x >= 100.0 {
        format!("{x:.0}×")
    } else if x >= 10.0 {
        format!("{x:.1}×")
    } else if x >= 0.01 {
        format!("{x:.2}×")
    } else {
        format!("{x:.4}×")
    }
}

pub fn opt_speedup(x: Option<f64>) -> String {
    x.map_or_else(|| NONE.to_string(), speedup)
}

/// Milliseconds with three significant digits: `0.05080` → `0.0508 ms`.
pub fn millis(x: f64) -> String {
    if !x.is_finite() {
        return NONE.to_string();
    }
    format!("{} ms", significant(x, 3))
}

/// `x` with `digits` significant digits, plain notation.
pub fn significant(x: f64, digits: i32) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).clamp(0, 12) as usize;
    format!("{x:.decimals$}")
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
    format!("{c}/{n} ({})", percent(f64::from(c) / f64::from(n)))
}

/// A value for a `data-v` sort key: numbers in plain notation, absent values empty (sorted
/// last by the page script).
pub fn sort_key(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.6}"),
        _ => String::new(),
    }
}

/// A scientific value for error metrics: `0.00162` → `1.62e-3`.
pub fn scientific(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => {
            if v == 0.0 {
                "0".to_string()
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
        assert_eq!(speedup(12.34), "12.3×");
        assert_eq!(millis(0.05079999938607216), "0.0508 ms");
        assert_eq!(millis(7.99), "7.99 ms");
        assert_eq!(millis(123.4), "123 ms");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(12), "12 B");
        assert_eq!(count_rate(9, 12), "9/12 (75.0%)");
        assert_eq!(sort_key(None), "");
        assert_eq!(scientific(Some(0.0016243996)), "1.62e-3");
        assert_eq!(tflops(818.04), "818.0 TFLOP/s");
    }
}
