//! Best speedup against the model's release date on one architecture (as the paper's
//! viewer): one point per (entry, task) at the largest turn limit, coloured by task family,
//! circles for reported and squares for measured. Entries without a release date are left
//! out (the page says how many).

use std::collections::BTreeSet;

use plotters::prelude::*;

use super::{
    FAMILIES, LEGEND_WIDTH, LegendItem, Marker, Plot, WIDTH, color, draw_legend, draw_marker,
    grid_style, library_style, log_range, plot_error, render, speedup_label, task_family,
};
use crate::metrics::{Provenance, TURN_LIMITS};
use crate::site::SiteError;
use crate::site::context::Context;

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

/// The (year, month, day) of a day count since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
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

/// Days of a `YYYY-MM-DD` date.
pub fn parse_date(s: &str) -> Option<i64> {
    let mut parts = s.splitn(3, '-');
    let y = parts.next()?.parse().ok()?;
    let m = parts.next()?.parse().ok()?;
    let d = parts.next()?.parse().ok()?;
    Some(days_from_civil(y, m, d))
}

pub fn speedup_by_release_date(ctx: &Context<'_>, arch: &str) -> Result<Option<Plot>, SiteError> {
    let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
    let mut points: Vec<(i64, f64, &str, Provenance)> = Vec::new();
    for t in ctx
        .metrics
        .tasks
        .iter()
        .filter(|t| t.arch == arch && t.turn_limit == limit)
    {
        let date = ctx
            .entry(&t.entry)
            .and_then(|e| e.release_date.as_deref())
            .and_then(parse_date);
        if let (Some(date), Some(s)) = (date, t.best_speedup) {
            points.push((date, s, task_family(&t.task), t.provenance));
        }
    }
    if points.is_empty() {
        return Ok(None);
    }
    let families: Vec<&str> = {
        let present: BTreeSet<&str> = points.iter().map(|p| p.2).collect();
        FAMILIES
            .iter()
            .copied()
            .filter(|f| present.contains(f))
            .collect()
    };
    let (d0, d1) = points
        .iter()
        .fold((i64::MAX, i64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (d0, d1) = (d0 - 45, d1 + 45);
    let (lo, hi) = log_range(points.iter().map(|p| p.1));
    let name = format!("{arch}-speedup-by-release-date");
    let title = format!("Best speedup against model release date on {arch} (turn limit {limit})");
    let plot = render(&name, &title, |root| {
        let (left, right) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
        let mut chart = ChartBuilder::on(&left)
            .caption(&title, (super::FONT, 18))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d((d0 as f64)..(d1 as f64), (lo..hi).log_scale())
            .map_err(|e| plot_error(&name, e))?;
        chart
            .configure_mesh()
            .x_labels(8)
            .x_label_formatter(&|v| {
                let (y, m, _) = civil_from_days(v.round() as i64);
                format!("{y}-{m:02}")
            })
            .y_labels(8)
            .y_label_formatter(&speedup_label)
            .light_line_style(TRANSPARENT)
            .bold_line_style(grid_style())
            .x_desc("model release date (year-month)")
            .y_desc("best speedup over the library (×, log scale)")
            .axis_desc_style((super::FONT, 13))
            .draw()
            .map_err(|e| plot_error(&name, e))?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(d0 as f64, 1.0), (d1 as f64, 1.0)],
                library_style(),
            )))
            .map_err(|e| plot_error(&name, e))?;
        for (date, s, family, prov) in &points {
            let ci = families.iter().position(|f| f == family).unwrap_or(0);
            let p = chart.backend_coord(&(*date as f64, *s));
            let marker = match prov {
                Provenance::Reported => Marker::Circle,
                Provenance::Measured => Marker::Square,
            };
            draw_marker(&left, marker, color(ci), p, &name)?;
        }
        let items: Vec<LegendItem> = families
            .iter()
            .enumerate()
            .map(|(i, f)| LegendItem {
                label: f.to_string(),
                color: color(i),
                marker: Marker::Circle,
            })
            .collect();
        draw_legend(&right, "task family (● reported ■ measured)", &items, &name)?;
        Ok(())
    })?;
    Ok(Some(plot))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(parse_date("2026-01-31"), Some(days_from_civil(2026, 1, 31)));
        for z in [-1000, 0, 10_000, 20_483, 30_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
        assert_eq!(parse_date("junk"), None);
    }
}
