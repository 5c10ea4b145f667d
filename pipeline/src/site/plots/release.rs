//! Best speedup against the model's release date on one architecture (as the paper's
//! viewer): one point per (entry, task) at the largest turn limit, coloured by model (each
//! model its own colour, named in the legend with its date, and beside its best point where
//! the label has room), circles for reported and squares for measured. Entries without a
//! release date are left out (the page names them).

use std::collections::BTreeSet;

use plotters::prelude::*;

use super::{
    Intervals, LegendItem, Marker, Plot, chart_and_legend, draw_legend, draw_marker, grid_style,
    interval_text, library_style, log_range, plot_error, plot_height, provenance_marker, render,
    series_color, shorten, speedup_label,
};
use crate::metrics::{Provenance, TURN_LIMITS};
use crate::site::SiteError;
use crate::site::context::Context;
use crate::site::format;

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

/// A placed label's box in pixels: (left, top, right, bottom).
type LabelBox = (i32, i32, i32, i32);

fn overlaps(a: LabelBox, b: LabelBox) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// Where to put a label of `chars` characters next to the point at `p`: right or left of it,
/// or a line or more above or below, the first spot that overlaps no placed label and stays in `bounds`;
/// `None` when none does (the legend still names the model).
fn place_label(
    p: (i32, i32),
    chars: usize,
    placed: &[LabelBox],
    bounds: LabelBox,
) -> Option<LabelBox> {
    let w = 7 * chars as i32;
    let h = 13;
    let spots = [0, -14, 14, -28, 28, -42, 42]
        .into_iter()
        .flat_map(|dy| [(p.0 + 8, dy), (p.0 - 8 - w, dy)]);
    for (x, dy) in spots {
        let b = (x, p.1 - h / 2 + dy, x + w, p.1 + h / 2 + dy);
        let inside = b.0 >= bounds.0 && b.1 >= bounds.1 && b.2 <= bounds.2 && b.3 <= bounds.3;
        if inside && !placed.iter().any(|q| overlaps(*q, b)) {
            return Some(b);
        }
    }
    None
}

pub fn speedup_by_release_date<'a>(
    ctx: &'a Context<'_>,
    panel: &super::Panel,
) -> Result<Option<Plot>, SiteError> {
    let arch = panel.arch.as_str();
    let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
    // (date, speedup, entry, task, provenance, interval)
    type Point<'p> = (i64, f64, &'p str, &'p str, Provenance, Option<[f64; 2]>);
    let mut points: Vec<Point<'_>> = Vec::new();
    for t in ctx
        .metrics
        .tasks
        .iter()
        .filter(|t| t.arch == arch && t.turn_limit == limit)
        .filter(|t| panel.admits(&t.entry, t.provenance, &t.gpu))
    {
        let date = ctx
            .entry(&t.entry)
            .and_then(|e| e.release_date.as_deref())
            .and_then(parse_date);
        if let (Some(date), Some(s)) = (date, t.best_speedup) {
            points.push((
                date,
                s,
                &t.entry,
                &t.task,
                t.provenance,
                t.best_speedup_ci95,
            ));
        }
    }
    if points.is_empty() {
        return Ok(None);
    }
    // Models in release order, then by name.
    let models: Vec<(i64, &str)> = points
        .iter()
        .map(|p| (p.0, p.2))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let label = |entry: &'a str| super::display_name(ctx, entry);
    let items: Vec<LegendItem> = models
        .iter()
        .enumerate()
        .map(|(i, (date, entry))| {
            let (y, m, d) = civil_from_days(*date);
            LegendItem {
                label: format!("{} ({y}-{m:02}-{d:02})", label(entry)),
                color: series_color(i, models.len()),
                marker: Marker::Circle,
            }
        })
        .collect();
    let (d0, d1) = points
        .iter()
        .fold((i64::MAX, i64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    // Room on the right for the labels of the latest models.
    let (d0, d1) = (d0 - 45, d1 + 45 + (d1 - d0) / 4);
    let (lo, hi) = log_range(
        points
            .iter()
            .flat_map(|p| std::iter::once(p.1).chain(p.5.into_iter().flatten())),
    );
    let name = panel.name("speedup-by-release-date");
    let title = panel.title(&format!(
        "Best speedup against model release date on {arch} (turn limit {limit})"
    ));
    let mut intervals = Intervals::default();
    let mut plot = render(&name, &title, plot_height(&items), |root, tips| {
        let (left, right) = chart_and_legend(root);
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
        let model_index = |entry: &str| models.iter().position(|m| m.1 == entry).unwrap_or(0);
        // Interval bars first, so every marker is on top of them.
        for (date, s, entry, _, _, ci) in &points {
            if let Some([a, b]) = ci {
                let bar = (
                    chart.backend_coord(&(*date as f64, *b)),
                    chart.backend_coord(&(*date as f64, *a)),
                );
                let color = items[model_index(entry)].color;
                intervals.draw(&left, color, ([*a, *b], *s), bar, &name)?;
            }
        }
        for (date, s, entry, task, prov, ci) in &points {
            let p = chart.backend_coord(&(*date as f64, *s));
            let c = items[model_index(entry)].color;
            draw_marker(&left, provenance_marker(*prov), c, p, &name)?;
            let (y, m, d) = civil_from_days(*date);
            tips.add(
                p,
                format!(
                    "{} ({prov}, released {y}-{m:02}-{d:02}) · {task} · best speedup {}{}",
                    label(entry),
                    format::speedup(*s),
                    interval_text(*ci)
                ),
            );
        }
        // Each model named beside its best point, where there is room.
        let (x0, y0) = chart.backend_coord(&(d0 as f64, hi));
        let (x1, y1) = chart.backend_coord(&(d1 as f64, lo));
        let bounds = (x0, y0, x1, y1);
        let mut placed: Vec<LabelBox> = Vec::new();
        let point_boxes: Vec<LabelBox> = points
            .iter()
            .map(|p| {
                let (x, y) = chart.backend_coord(&(p.0 as f64, p.1));
                (x - 5, y - 5, x + 5, y + 5)
            })
            .collect();
        for (i, (_, entry)) in models.iter().enumerate() {
            let Some(best) = points
                .iter()
                .filter(|p| p.2 == *entry)
                .max_by(|a, b| a.1.total_cmp(&b.1))
            else {
                continue;
            };
            let text = shorten(label(entry), 24);
            let at = chart.backend_coord(&(best.0 as f64, best.1));
            let taken: Vec<LabelBox> = placed.iter().chain(&point_boxes).copied().collect();
            if let Some(b) = place_label(at, text.chars().count(), &taken, bounds) {
                let style = TextStyle::from((super::FONT, 12).into_font()).color(&items[i].color);
                left.draw(&Text::new(text, (b.0, b.1), style))
                    .map_err(|e| plot_error(&name, e))?;
                placed.push(b);
            }
        }
        draw_legend(
            &right,
            "model (release date); ● reported ■ measured",
            &items,
            &name,
        )?;
        Ok(())
    })?;
    plot.note = intervals.note();
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

    #[test]
    fn labels_do_not_overlap() {
        let bounds = (0, 0, 500, 500);
        let a = place_label((100, 100), 10, &[], bounds).expect("room");
        let b = place_label((100, 100), 10, &[a], bounds).expect("room above or below");
        assert!(!overlaps(a, b));
        assert_eq!(place_label((495, 100), 10, &[], (480, 0, 500, 500)), None);
    }
}
