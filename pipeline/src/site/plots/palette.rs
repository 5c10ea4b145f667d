//! Series colours: `n` series get `n` distinct colours, made deterministically from `n`
//! evenly spaced hues with alternating lightness, so a plot never repeats a colour however
//! many series it has (even series darker, odd ones lighter, both dark enough for a thin
//! dotted line on white). Series take the hues in a stride of about 0.38 of the wheel (a step
//! coprime with `n`, so every hue is used once): neighbouring series, often one model's
//! variants, get far-apart hues.

use plotters::style::RGBColor;

/// The colour of series `i` of `n` (`i < n`). Distinct for distinct `i` of one `n` as long as
/// the hues stay at least a few degrees apart (tested up to 200 series).
pub fn series_color(i: usize, n: usize) -> RGBColor {
    let n = n.max(1);
    let slot = (i % n) * stride(n) % n;
    // Start at a blue; even series darker, odd ones lighter.
    let hue = (210.0 + 360.0 * slot as f64 / n as f64) % 360.0;
    let lightness = if i.is_multiple_of(2) { 0.42 } else { 0.52 };
    hsl(hue, 0.68, lightness)
}

/// The step through the `n` hues: the integer coprime with `n` nearest `0.38 n` (1 for n < 4).
fn stride(n: usize) -> usize {
    if n < 4 {
        return 1;
    }
    let target = (n as f64 * 0.382).round() as usize;
    (0..n)
        .flat_map(|d| [target.saturating_sub(d), target + d])
        .find(|s| *s >= 1 && *s < n && gcd(*s, n) == 1)
        .unwrap_or(1)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// HSL (hue in degrees, saturation and lightness in [0, 1]) to 8-bit RGB.
fn hsl(h: f64, s: f64, l: f64) -> RGBColor {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let hp = h / 60.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(byte(r), byte(g), byte(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn no_colour_repeats_within_a_plot() {
        for n in 1..=200 {
            let set: BTreeSet<(u8, u8, u8)> = (0..n)
                .map(|i| {
                    let c = series_color(i, n);
                    (c.0, c.1, c.2)
                })
                .collect();
            assert_eq!(set.len(), n, "{n} series");
        }
    }

    #[test]
    fn colours_are_stable() {
        assert_eq!(series_color(0, 1), series_color(0, 1));
        let c = series_color(0, 4);
        assert_eq!(hsl(0.0, 1.0, 0.5), RGBColor(255, 0, 0));
        assert_ne!(c, series_color(1, 4));
    }
}
