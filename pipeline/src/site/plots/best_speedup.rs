//! Best speedup per task per entry on one architecture, at the largest turn limit: a dot per
//! (entry, task), circles for reported and squares for measured, against the library at 1×.

use std::collections::BTreeSet;

use super::{
    Intervals, Plot, chart_and_legend, draw_category_labels, draw_legend, draw_marker,
    interval_text, log_range, plot_height, provenance_marker, render, series_legend,
    task_speedup_chart,
};
use crate::metrics::{Provenance, TURN_LIMITS};
use crate::site::SiteError;
use crate::site::context::Context;
use crate::site::format;

pub fn best_speedup_per_task<'a>(
    ctx: &'a Context<'_>,
    panel: &super::Panel,
) -> Result<Option<Plot>, SiteError> {
    let arch = panel.arch.as_str();
    let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
    let rows: Vec<_> = ctx
        .metrics
        .tasks
        .iter()
        .filter(|t| t.arch == arch && t.turn_limit == limit && t.best_speedup.is_some())
        .filter(|t| panel.admits(&t.entry, t.provenance, &t.gpu))
        .collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let tasks: Vec<&str> = rows
        .iter()
        .map(|t| t.task.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let series: Vec<(Provenance, &str)> = rows
        .iter()
        .map(|t| (t.provenance, t.entry.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let name = panel.name("best-speedup");
    let title = panel.title(&format!(
        "Best speedup per task on {arch} (turn limit {limit})"
    ));
    // The range covers the intervals too, so no bar is cut at the frame.
    let (lo, hi) = log_range(rows.iter().flat_map(|t| {
        t.best_speedup
            .into_iter()
            .chain(t.best_speedup_ci95.into_iter().flatten())
    }));
    let n_series = series.len();
    let label = |entry: &'a str| super::display_name(ctx, entry);
    let items = series_legend(ctx, &series, provenance_marker);
    let mut intervals = Intervals::default();
    let mut plot = render(&name, &title, plot_height(&items), |root, tips| {
        let (left, right) = chart_and_legend(root);
        let chart = task_speedup_chart(
            &left,
            (&title, 18.0),
            tasks.len(),
            (lo, hi),
            "best speedup over the library (×, log scale)",
            &name,
        )?;
        let n = n_series as f64;
        let width = 0.7f64;
        // Markers go on top of every interval bar.
        let mut marks = Vec::new();
        for (si, (prov, entry)) in series.iter().enumerate() {
            let offset = if n > 1.0 {
                -width / 2.0 + width * si as f64 / (n - 1.0)
            } else {
                0.0
            };
            for t in rows
                .iter()
                .filter(|t| t.provenance == *prov && t.entry == *entry)
            {
                let (Some(x), Some(y)) = (tasks.iter().position(|k| *k == t.task), t.best_speedup)
                else {
                    continue;
                };
                let p = chart.backend_coord(&(x as f64 + offset, y));
                if let Some([a, b]) = t.best_speedup_ci95 {
                    let bar = (
                        chart.backend_coord(&(x as f64 + offset, b)),
                        chart.backend_coord(&(x as f64 + offset, a)),
                    );
                    intervals.draw(&left, items[si].color, ([a, b], y), bar, &name)?;
                }
                marks.push((p, si));
                tips.add(
                    p,
                    format!(
                        "{} ({prov}) · {} · best speedup {}{}",
                        label(entry),
                        t.task,
                        format::speedup(y),
                        interval_text(t.best_speedup_ci95)
                    ),
                );
            }
        }
        for (p, si) in marks {
            draw_marker(&left, items[si].marker, items[si].color, p, &name)?;
        }
        let labels: Vec<(i32, String)> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (chart.backend_coord(&(i as f64, lo)).0, t.to_string()))
            .collect();
        let y = chart.backend_coord(&(0.0, lo)).1 + 8;
        draw_category_labels(&left, &labels, y, &name)?;
        draw_legend(&right, "● reported  ■ measured", &items, &name)?;
        Ok(())
    })?;
    plot.note = intervals.note();
    Ok(Some(plot))
}
