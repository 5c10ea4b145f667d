//! Plots as SVG, drawn with plotters' SVG backend into a string: no fonts are read (text is
//! laid out with plotters' built-in estimate and rendered by the browser), no clock, no
//! randomness, so the same numbers give the same bytes.
//!
//! [`Svg`] is the one type pages insert without escaping: it can only be made here, from
//! markup plotters drew (plotters escapes every text it writes).

mod best_speedup;
mod distribution;
mod release;
mod turns;

use std::fmt;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

pub use best_speedup::best_speedup_per_task;
pub use distribution::speedup_distribution;
pub use release::speedup_by_release_date;
pub use turns::rates_by_turn_limit;

use super::SiteError;

/// SVG markup drawn by this program. Rendered unescaped (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Svg(String);

impl Svg {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The markup for inlining in HTML, where the `xmlns` attribute is implied.
    pub fn inline(&self) -> Svg {
        Svg(self
            .0
            .replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1))
    }
}

impl fmt::Display for Svg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl askama::filters::HtmlSafe for Svg {}

/// A drawn plot: its file name stem, its title and the SVG.
#[derive(Debug, Clone)]
pub struct Plot {
    pub name: String,
    pub title: String,
    pub svg: Svg,
}

/// Plot size in pixels (the SVG scales with its `viewBox`).
pub const WIDTH: u32 = 960;
pub const HEIGHT: u32 = 460;
/// Width of the legend column on the right.
pub const LEGEND_WIDTH: u32 = 250;
pub const FONT: &str = "sans-serif";

/// A qualitative palette (Tableau 10 and two more), cycled by series index.
const PALETTE: [RGBColor; 12] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0x79, 0x70, 0x6e),
    RGBColor(0x1b, 0x9e, 0x77),
    RGBColor(0x75, 0x70, 0xb3),
];

pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The colours of the two provenances where a plot splits by provenance.
pub const REPORTED_COLOR: RGBColor = RGBColor(0xd9, 0x8c, 0x00);
pub const MEASURED_COLOR: RGBColor = RGBColor(0x1f, 0x6f, 0xb4);
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
const LIBRARY_LINE: RGBColor = RGBColor(0x33, 0x33, 0x33);

/// How a legend item is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A filled circle: reported.
    Circle,
    /// A filled square with an outline: measured.
    Square,
    /// A box (distribution).
    Box,
    /// A solid line.
    Line,
    /// A dashed line.
    Dashed,
}

#[derive(Debug, Clone)]
pub struct LegendItem {
    pub label: String,
    pub color: RGBColor,
    pub marker: Marker,
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

pub(crate) fn plot_error(plot: &str, e: impl fmt::Display) -> SiteError {
    SiteError::Plot {
        plot: plot.to_string(),
        message: e.to_string(),
    }
}

/// The chart both per-task speedup plots draw on: one slot per task along x, speedup on a
/// log-scaled y axis, with the mesh and the library's 1x line already drawn.
pub(crate) type TaskSpeedupChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, LogCoord<f64>>>;

pub(crate) fn task_speedup_chart<'a, 'b>(
    area: &'a Area<'b>,
    (title, caption_size): (&str, f64),
    tasks: usize,
    (lo, hi): (f64, f64),
    y_desc: &str,
    plot: &str,
) -> Result<TaskSpeedupChart<'a, 'b>, SiteError> {
    let right = tasks as f64 - 0.5;
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, caption_size))
        .margin(12)
        .x_label_area_size(175)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..right, (lo..hi).log_scale())
        .map_err(|e| plot_error(plot, e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .y_label_formatter(&speedup_label)
        .light_line_style(TRANSPARENT)
        .bold_line_style(grid_style())
        .y_desc(y_desc)
        .x_desc("task")
        .axis_desc_style((FONT, 13))
        .draw()
        .map_err(|e| plot_error(plot, e))?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(-0.5, 1.0), (right, 1.0)],
            library_style(),
        )))
        .map_err(|e| plot_error(plot, e))?;
    Ok(chart)
}

/// Draws a marker of `marker` centred at pixel `(x, y)`.
fn draw_marker(
    area: &Area<'_>,
    marker: Marker,
    color: RGBColor,
    (x, y): (i32, i32),
    plot: &str,
) -> Result<(), SiteError> {
    let r = 5;
    let res = match marker {
        Marker::Circle => area.draw(&Circle::new((x, y), r, color.filled())),
        Marker::Square => area
            .draw(&Rectangle::new(
                [(x - r, y - r), (x + r, y + r)],
                color.filled(),
            ))
            .and_then(|_| {
                area.draw(&Rectangle::new(
                    [(x - r, y - r), (x + r, y + r)],
                    BLACK.stroke_width(1),
                ))
            }),
        Marker::Box => area
            .draw(&Rectangle::new(
                [(x - r, y - r), (x + r, y + r)],
                color.mix(0.35).filled(),
            ))
            .and_then(|_| {
                area.draw(&Rectangle::new(
                    [(x - r, y - r), (x + r, y + r)],
                    color.stroke_width(2),
                ))
            }),
        Marker::Line => area.draw(&PathElement::new(
            vec![(x - 12, y), (x + 12, y)],
            color.stroke_width(2),
        )),
        Marker::Dashed => area
            .draw(&PathElement::new(
                vec![(x - 12, y), (x - 4, y)],
                color.stroke_width(2),
            ))
            .and_then(|_| {
                area.draw(&PathElement::new(
                    vec![(x + 4, y), (x + 12, y)],
                    color.stroke_width(2),
                ))
            }),
    };
    res.map_err(|e| plot_error(plot, e))
}

/// Draws a legend (title, then one item a line) in `area`. Long labels are shortened.
fn draw_legend(
    area: &Area<'_>,
    title: &str,
    items: &[LegendItem],
    plot: &str,
) -> Result<(), SiteError> {
    let style = TextStyle::from((FONT, 13).into_font()).color(&BLACK);
    let bold = TextStyle::from((FONT, 13).into_font().style(FontStyle::Bold)).color(&BLACK);
    area.draw(&Text::new(title.to_string(), (8, 48), bold))
        .map_err(|e| plot_error(plot, e))?;
    let line = 19;
    let max_items = ((HEIGHT as i32 - 80) / line).max(1) as usize;
    for (i, item) in items.iter().take(max_items).enumerate() {
        let y = 70 + line * i as i32;
        draw_marker(area, item.marker, item.color, (22, y), plot)?;
        area.draw(&Text::new(
            shorten(&item.label, 30),
            (40, y - 7),
            style.clone(),
        ))
        .map_err(|e| plot_error(plot, e))?;
    }
    if items.len() > max_items {
        let y = 70 + line * max_items as i32;
        area.draw(&Text::new(
            format!("… and {} more", items.len() - max_items),
            (40, y - 7),
            style,
        ))
        .map_err(|e| plot_error(plot, e))?;
    }
    Ok(())
}

/// `s` cut to `n` characters with an ellipsis.
pub(crate) fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// A log-scale range covering `values` and 1 (the library), padded, within [1e-3, 1e3].
pub(crate) fn log_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (1.0f64, 1.0f64);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let lo = (lo / 1.6).max(1e-3);
    let hi = (hi * 1.6).min(1e3);
    // Whole decades, so the axis labels land on round numbers.
    (
        10f64.powf(lo.log10().floor()),
        10f64.powf(hi.log10().ceil()),
    )
}

/// Formats a speedup axis label: `0.1×`, `1×`, `10×`.
pub(crate) fn speedup_label(v: &f64) -> String {
    let s = format!("{}", (v * 1000.0).round() / 1000.0);
    format!("{s}×")
}

/// Runs `draw` on a fresh drawing area and returns the SVG.
pub(crate) fn render(
    name: &str,
    title: &str,
    draw: impl FnOnce(&Area<'_>) -> Result<(), SiteError>,
) -> Result<Plot, SiteError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_error(name, e))?;
        draw(&root)?;
        root.present().map_err(|e| plot_error(name, e))?;
    }
    Ok(Plot {
        name: name.to_string(),
        title: title.to_string(),
        svg: Svg(accessible(buf, title)),
    })
}

/// The SVG with `role="img"`, an `aria-label` and a `<title>` (its text alternative, also
/// what a browser shows on hover), all from `title`, XML-escaped.
fn accessible(svg: String, title: &str) -> String {
    let text = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    let Some(open) = svg.find("<svg") else {
        return svg;
    };
    let Some(end) = svg[open..].find('>').map(|e| open + e) else {
        return svg;
    };
    format!(
        "{} role=\"img\" aria-label=\"{text}\">\n<title>{text}</title>{}",
        &svg[..end],
        &svg[end + 1..]
    )
}

/// Task labels under a categorical x axis, rotated, at pixel x positions.
pub(crate) fn draw_category_labels(
    area: &Area<'_>,
    labels: &[(i32, String)],
    y: i32,
    plot: &str,
) -> Result<(), SiteError> {
    let style = TextStyle::from((FONT, 12).into_font().transform(FontTransform::Rotate90))
        .color(&BLACK)
        .pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Left,
            plotters::style::text_anchor::VPos::Center,
        ));
    for (x, label) in labels {
        area.draw(&Text::new(shorten(label, 26), (*x, y), style.clone()))
            .map_err(|e| plot_error(plot, e))?;
    }
    Ok(())
}

pub(crate) fn grid_style() -> ShapeStyle {
    GRID.stroke_width(1)
}

pub(crate) fn library_style() -> ShapeStyle {
    LIBRARY_LINE.stroke_width(1)
}

/// The family of a task for colouring, from its id.
pub(crate) fn task_family(task: &str) -> &'static str {
    if task.starts_with("gemm_fp8") {
        "GEMM fp8"
    } else if task.starts_with("gemm") {
        "GEMM"
    } else if task.starts_with("mha_with_lse") {
        "attention forward"
    } else if task.starts_with("mha_bwd") {
        "attention backward"
    } else if task.starts_with("gqa") {
        "GQA attention"
    } else {
        "other"
    }
}

/// Family names in legend order.
pub(crate) const FAMILIES: [&str; 6] = [
    "GEMM",
    "GEMM fp8",
    "attention forward",
    "attention backward",
    "GQA attention",
    "other",
];
