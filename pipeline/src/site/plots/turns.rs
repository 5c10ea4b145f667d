//! Correctness rate and correct-with-arch rate against the turn limit on one architecture:
//! two panels, one line per entry (macro average over its tasks), solid with circles for
//! reported entries and dashed with squares for measured ones. Entries whose target evidence
//! was not measured have no line in the second panel (the panel says so).

use std::collections::BTreeSet;

use plotters::prelude::*;

use super::{
    FONT, Marker, Plot, chart_and_legend, draw_legend, draw_marker, grid_style, plot_error,
    plot_height, provenance_marker, render, series_color, series_legend,
};
use crate::metrics::{OverallMetrics, Provenance, TURN_LIMITS};
use crate::site::SiteError;
use crate::site::context::Context;
use crate::site::format;

/// Points of a dashed polyline: the segments to draw, alternating on and off.
pub(crate) fn dashes(points: &[(i32, i32)], on: f64, off: f64) -> Vec<Vec<(i32, i32)>> {
    let mut out = Vec::new();
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let (dx, dy) = (f64::from(b.0 - a.0), f64::from(b.1 - a.1));
        let len = (dx * dx + dy * dy).sqrt();
        if len == 0.0 {
            continue;
        }
        let mut t = 0.0;
        while t < len {
            let t1 = (t + on).min(len);
            let p = |s: f64| {
                (
                    a.0 + (dx * s / len).round() as i32,
                    a.1 + (dy * s / len).round() as i32,
                )
            };
            out.push(vec![p(t), p(t1)]);
            t += on + off;
        }
    }
    out
}

pub fn rates_by_turn_limit<'a>(
    ctx: &'a Context<'_>,
    panel: &super::Panel,
) -> Result<Option<Plot>, SiteError> {
    let arch = panel.arch.as_str();
    let rows: Vec<&OverallMetrics> = ctx
        .metrics
        .overall
        .iter()
        .filter(|o| o.arch == arch && panel.admits(&o.entry, o.provenance, &o.gpu))
        .collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let series: Vec<(Provenance, &str)> = rows
        .iter()
        .map(|o| (o.provenance, o.entry.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let name = panel.name("rates-by-turn-limit");
    let title = panel.title(&format!("Correctness against turn limit on {arch}"));
    let last = TURN_LIMITS.len() as f64 - 1.0;
    let label = |entry: &'a str| super::display_name(ctx, entry);
    let n_series = series.len();
    let items = series_legend(ctx, &series, |prov| match prov {
        Provenance::Reported => Marker::Line,
        Provenance::Measured => Marker::Dashed,
    });
    let plot = render(&name, &title, plot_height(&items), |root, tips| {
        let (left, right) = chart_and_legend(root);
        let left = left
            .titled(&title, (FONT, 18))
            .map_err(|e| plot_error(&name, e))?;
        let panels = left.split_evenly((1, 2));
        let panel_titles = [
            "correctness rate",
            "correct-with-arch rate (dynamic evidence)",
        ];
        for (pi, panel) in panels.iter().enumerate() {
            let mut chart = ChartBuilder::on(panel)
                .caption(panel_titles[pi], (FONT, 14))
                .margin(10)
                .x_label_area_size(45)
                .y_label_area_size(55)
                .build_cartesian_2d(-0.3f64..(last + 0.3), 0f64..100f64)
                .map_err(|e| plot_error(&name, e))?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .y_labels(11)
                .y_label_formatter(&|v| format!("{v:.0}%"))
                .light_line_style(TRANSPARENT)
                .bold_line_style(grid_style())
                .x_desc("turn limit (turns)")
                .y_desc("trajectories (%)")
                .axis_desc_style((FONT, 13))
                .draw()
                .map_err(|e| plot_error(&name, e))?;
            let label_style = TextStyle::from((FONT, 12).into_font()).color(&BLACK).pos(
                plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Top,
                ),
            );
            for (i, l) in TURN_LIMITS.iter().enumerate() {
                let (x, y) = chart.backend_coord(&(i as f64, 0.0));
                // backend_coord is absolute: draw on the root area, whose origin is (0, 0).
                root.draw(&Text::new(l.to_string(), (x, y + 6), label_style.clone()))
                    .map_err(|e| plot_error(&name, e))?;
            }
            let mut missing = false;
            for (si, (prov, entry)) in series.iter().enumerate() {
                let mut points: Vec<(f64, f64, u32)> = Vec::new();
                for o in rows
                    .iter()
                    .filter(|o| o.provenance == *prov && o.entry == *entry)
                {
                    let v = if pi == 0 {
                        Some(o.correctness_rate)
                    } else {
                        o.correct_with_arch_rate
                    };
                    let x = TURN_LIMITS.iter().position(|l| *l == o.turn_limit);
                    match (x, v) {
                        (Some(x), Some(v)) => points.push((x as f64, v * 100.0, o.turn_limit)),
                        (_, None) => missing = true,
                        _ => {}
                    }
                }
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                if points.is_empty() {
                    continue;
                }
                let px: Vec<(i32, i32)> = points
                    .iter()
                    .map(|p| chart.backend_coord(&(p.0, p.1)))
                    .collect();
                let color = series_color(si, n_series);
                let style = color.stroke_width(2);
                match prov {
                    Provenance::Reported => {
                        root.draw(&PathElement::new(px.clone(), style))
                            .map_err(|e| plot_error(&name, e))?;
                    }
                    Provenance::Measured => {
                        for seg in dashes(&px, 7.0, 5.0) {
                            root.draw(&PathElement::new(seg, style))
                                .map_err(|e| plot_error(&name, e))?;
                        }
                    }
                }
                for (p, (_, v, limit)) in px.iter().zip(&points) {
                    draw_marker(root, provenance_marker(*prov), color, *p, &name)?;
                    tips.add(
                        *p,
                        format!(
                            "{} ({prov}) · turn limit {limit} · {} {}",
                            label(entry),
                            panel_titles[pi],
                            format::percent(v / 100.0)
                        ),
                    );
                }
            }
            if pi == 1 && missing {
                let (x, y) = chart.backend_coord(&(last / 2.0, 97.0));
                let note = TextStyle::from((FONT, 12).into_font())
                    .color(&RGBColor(0x66, 0x66, 0x66))
                    .pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Center,
                    ));
                root.draw(&Text::new(
                    "entries without dynamic evidence: not measured".to_string(),
                    (x, y),
                    note,
                ))
                .map_err(|e| plot_error(&name, e))?;
            }
        }
        draw_legend(&right, "entry (source)", &items, &name)?;
        Ok(())
    })?;
    Ok(Some(plot))
}

#[cfg(test)]
mod tests {
    use super::dashes;

    #[test]
    fn dashes_cover_the_line_in_order() {
        let d = dashes(&[(0, 0), (24, 0)], 7.0, 5.0);
        assert_eq!(d, vec![vec![(0, 0), (7, 0)], vec![(12, 0), (19, 0)]]);
    }
}
