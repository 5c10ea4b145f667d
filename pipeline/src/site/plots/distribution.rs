//! The distribution of speedups per task on one architecture: for each task, a box (quartiles,
//! median line, whiskers to min and max) of the speedups of correct trajectories at the
//! largest turn limit, reported and measured side by side, never pooled.

use std::collections::BTreeSet;

use plotters::prelude::*;

use super::{
    HEIGHT, LegendItem, MEASURED_COLOR, Marker, Plot, REPORTED_COLOR, chart_and_legend,
    draw_category_labels, draw_legend, log_range, plot_error, render, task_speedup_chart,
};
use crate::metrics::{Provenance, TURN_LIMITS};
use crate::record::stats::quantile;
use crate::site::SiteError;
use crate::site::context::Context;
use crate::site::format;

pub fn speedup_distribution(
    ctx: &Context<'_>,
    panel: &super::Panel,
) -> Result<Option<Plot>, SiteError> {
    let arch = panel.arch.as_str();
    let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
    let points: Vec<_> = ctx
        .metrics
        .speedups
        .iter()
        .filter(|p| p.arch == arch && p.turn_limit == limit)
        .filter(|p| panel.admits(&p.entry, p.provenance, &p.gpu))
        .collect();
    if points.is_empty() {
        return Ok(None);
    }
    let tasks: Vec<&str> = points
        .iter()
        .map(|p| p.task.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let (lo, hi) = log_range(points.iter().map(|p| p.speedup));
    let name = panel.name("speedup-distribution");
    let title = panel.title(&format!(
        "Speedup distribution per task on {arch} (correct trajectories, turn limit {limit})"
    ));
    let plot = render(&name, &title, HEIGHT, |root, tips| {
        let (left, right) = chart_and_legend(root);
        let mut chart = task_speedup_chart(
            &left,
            (&title, 16.0),
            tasks.len(),
            (lo, hi),
            "speedup over the library (×, log scale)",
            &name,
        )?;
        for (ti, task) in tasks.iter().enumerate() {
            for (prov, offset, c) in [
                (Provenance::Reported, -0.2, REPORTED_COLOR),
                (Provenance::Measured, 0.2, MEASURED_COLOR),
            ] {
                let mut v: Vec<f64> = points
                    .iter()
                    .filter(|p| p.task == *task && p.provenance == prov)
                    .map(|p| p.speedup)
                    .collect();
                if v.is_empty() {
                    continue;
                }
                v.sort_by(f64::total_cmp);
                let x = ti as f64 + offset;
                let half = 0.15;
                let (q1, med, q3) = (quantile(&v, 0.25), quantile(&v, 0.5), quantile(&v, 0.75));
                let (min, max) = (v[0], v[v.len() - 1]);
                let whisker = c.stroke_width(1);
                chart
                    .draw_series([
                        PathElement::new(vec![(x, min), (x, q1)], whisker),
                        PathElement::new(vec![(x, q3), (x, max)], whisker),
                        PathElement::new(
                            vec![(x - half / 2.0, min), (x + half / 2.0, min)],
                            whisker,
                        ),
                        PathElement::new(
                            vec![(x - half / 2.0, max), (x + half / 2.0, max)],
                            whisker,
                        ),
                    ])
                    .map_err(|e| plot_error(&name, e))?;
                chart
                    .draw_series([
                        Rectangle::new([(x - half, q1), (x + half, q3)], c.mix(0.3).filled()),
                        Rectangle::new([(x - half, q1), (x + half, q3)], c.stroke_width(1)),
                    ])
                    .map_err(|e| plot_error(&name, e))?;
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x - half, med), (x + half, med)],
                        c.stroke_width(3),
                    )))
                    .map_err(|e| plot_error(&name, e))?;
                tips.add(
                    chart.backend_coord(&(x, med)),
                    format!(
                        "{task} ({prov}) · {} correct trajectories · median {} (min {}, max {})",
                        v.len(),
                        format::speedup(med),
                        format::speedup(min),
                        format::speedup(max)
                    ),
                );
            }
        }
        let labels: Vec<(i32, String)> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (chart.backend_coord(&(i as f64, lo)).0, t.to_string()))
            .collect();
        let y = chart.backend_coord(&(0.0, lo)).1 + 8;
        draw_category_labels(&left, &labels, y, &name)?;
        let items = [
            LegendItem {
                label: "reported (paper)".into(),
                color: REPORTED_COLOR,
                marker: Marker::Box,
            },
            LegendItem {
                label: "measured here".into(),
                color: MEASURED_COLOR,
                marker: Marker::Box,
            },
        ];
        draw_legend(&right, "source", &items, &name)?;
        Ok(())
    })?;
    Ok(Some(plot))
}
