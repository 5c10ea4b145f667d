//! fast_p curves on one architecture (as KernelBench and FlashInfer-Bench draw them): for p
//! from 0 to 2, the fraction of trajectories correct with a speedup (smallest over the
//! workloads) above p, at the largest turn limit. One line per model, solid for reported and
//! dashed for measured; reference kernels as thin dotted reference lines; the library at p = 1.

use plotters::prelude::*;

use super::turns::dashes;
use super::{
    FONT, LegendItem, Marker, Plot, chart_and_legend, draw_legend, draw_marker, grid_style,
    library_style, plot_error, plot_height, render, series_color,
};
use crate::metrics::fast_p::{FastCurve, fast_p_curves, p_grid};
use crate::metrics::{Provenance, TURN_LIMITS};
use crate::site::SiteError;
use crate::site::context::{Context, EntryKind};
use crate::site::format;

/// The largest p drawn and the steps up to it.
pub const P_MAX: f64 = 2.0;
const STEPS: u32 = 200;
/// Where points carry a marker and a hover text.
const MARKED: [f64; 5] = [0.0, 0.5, 1.0, 1.5, 2.0];

pub fn fast_p_curves_plot(
    ctx: &Context<'_>,
    panel: &super::Panel,
) -> Result<Option<Plot>, SiteError> {
    let arch = panel.arch.as_str();
    let ps = p_grid(P_MAX, STEPS);
    let mut curves = fast_p_curves(&ctx.metrics.tasks, &ctx.metrics.speedups, arch, &ps);
    curves.retain(|c| panel.admits(&c.entry, c.provenance, &c.gpu));
    if curves.is_empty() {
        return Ok(None);
    }
    let kind = |c: &FastCurve| ctx.entry(&c.entry).map_or(EntryKind::Reference, |e| e.kind);
    // Models first, then references; each in key order.
    let mut ordered: Vec<&FastCurve> = curves
        .iter()
        .filter(|c| kind(c) == EntryKind::Model)
        .collect();
    ordered.extend(curves.iter().filter(|c| kind(c) == EntryKind::Reference));
    let label = |c: &FastCurve| {
        let name = ctx
            .entry(&c.entry)
            .map_or(c.entry.as_str(), |e| e.display_name.as_str());
        if kind(c) == EntryKind::Reference {
            format!("{name} · {} tasks", c.tasks)
        } else {
            format!("{name} · {} · {} tasks", c.provenance, c.tasks)
        }
    };
    let n = ordered.len();
    let items: Vec<LegendItem> = ordered
        .iter()
        .enumerate()
        .map(|(i, c)| LegendItem {
            label: label(c),
            color: series_color(i, n),
            marker: match (kind(c), c.provenance) {
                (EntryKind::Reference, _) => Marker::Dotted,
                (_, Provenance::Reported) => Marker::Line,
                (_, Provenance::Measured) => Marker::Dashed,
            },
        })
        .collect();
    let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
    let name = panel.name("fast-p");
    let title = panel.title(&format!(
        "fast_p on {arch}: correct and faster than p × the library (turn limit {limit})"
    ));
    let plot = render(&name, &title, plot_height(&items), |root, tips| {
        let (left, right) = chart_and_legend(root);
        let mut chart = ChartBuilder::on(&left)
            .caption(&title, (FONT, 16))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..P_MAX, 0f64..100f64)
            .map_err(|e| plot_error(&name, e))?;
        chart
            .configure_mesh()
            .x_labels(9)
            .x_label_formatter(&|v| format!("{v:.2}"))
            .y_labels(11)
            .y_label_formatter(&|v| format!("{v:.0}%"))
            .light_line_style(TRANSPARENT)
            .bold_line_style(grid_style())
            .x_desc("p (speedup threshold over the library, ×)")
            .y_desc("fast_p (% of trajectories)")
            .axis_desc_style((FONT, 13))
            .draw()
            .map_err(|e| plot_error(&name, e))?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(1.0, 0.0), (1.0, 100.0)],
                library_style(),
            )))
            .map_err(|e| plot_error(&name, e))?;
        // References first, so the models' lines lie on top.
        let order: Vec<usize> = (0..n).rev().collect();
        for i in order {
            let c = ordered[i];
            let item = &items[i];
            let px: Vec<(i32, i32)> = c
                .points
                .iter()
                .map(|(p, v)| chart.backend_coord(&(*p, v * 100.0)))
                .collect();
            let (width, on, off) = match item.marker {
                Marker::Dotted => (1, 2.0, 3.0),
                Marker::Dashed => (2, 7.0, 5.0),
                _ => (2, 0.0, 0.0),
            };
            let style = item.color.stroke_width(width);
            if on == 0.0 {
                left.draw(&PathElement::new(px, style))
                    .map_err(|e| plot_error(&name, e))?;
            } else {
                for seg in dashes(&px, on, off) {
                    left.draw(&PathElement::new(seg, style))
                        .map_err(|e| plot_error(&name, e))?;
                }
            }
            for (p, v) in c.points.iter().filter(|(p, _)| MARKED.contains(p)) {
                let at = chart.backend_coord(&(*p, v * 100.0));
                if item.marker != Marker::Dotted {
                    draw_marker(&left, Marker::Dot, item.color, at, &name)?;
                }
                tips.add(
                    at,
                    format!("{} · fast_{p:.1} = {}", label(c), format::percent(*v)),
                );
            }
        }
        draw_legend(
            &right,
            "model · source · tasks; dotted: reference kernels (measured)",
            &items,
            &name,
        )?;
        Ok(())
    })?;
    Ok(Some(plot))
}
