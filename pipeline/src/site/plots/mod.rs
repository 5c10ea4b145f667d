//! Plots as SVG, drawn with plotters' SVG backend into a string: no fonts are read (text is
//! laid out with plotters' built-in estimate and rendered by the browser), no clock, no
//! randomness, so the same numbers give the same bytes.
//!
//! [`Svg`] is the one type pages insert without escaping (`|safe` in `arch.html`): it can
//! only be made here, from markup plotters drew (plotters escapes every text it writes).

mod best_speedup;
mod distribution;
mod fast_p;
mod palette;
mod panel;
mod release;
mod turns;

use std::fmt;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

pub use best_speedup::best_speedup_per_task;
pub use distribution::speedup_distribution;
pub use fast_p::fast_p_curves_plot;
pub use palette::series_color;
pub use panel::{MAX_SERIES, Panel, panels};
pub use release::{parse_date, speedup_by_release_date};
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

/// A drawn plot: its file name stem, its title and the SVG.
#[derive(Debug, Clone)]
pub struct Plot {
    pub name: String,
    pub title: String,
    pub svg: Svg,
    /// What the plot leaves out (see [`Panel::left_out`]); empty: nothing.
    pub note: String,
}

/// Plot size in pixels (the SVG scales with its `viewBox`); a plot whose legend needs more
/// room is taller (see [`plot_height`]), its chart keeps [`HEIGHT`].
pub const WIDTH: u32 = 960;
pub const HEIGHT: u32 = 460;
/// Width of the legend column on the right.
pub const LEGEND_WIDTH: u32 = 250;
pub const FONT: &str = "sans-serif";

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
    /// A thin dotted line (reference kernels).
    Dotted,
    /// A small filled circle (a point on a line).
    Dot,
}

#[derive(Debug, Clone)]
pub struct LegendItem {
    pub label: String,
    pub color: RGBColor,
    pub marker: Marker,
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The chart area (the left [`HEIGHT`] pixels tall, whatever the plot's height) and the legend
/// column of a plot.
pub(crate) fn chart_and_legend<'a>(root: &Area<'a>) -> (Area<'a>, Area<'a>) {
    let (left, right) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
    let (chart, _) = left.split_vertically(HEIGHT);
    (chart, right)
}

/// An entry's name as pages show it.
pub(crate) fn display_name<'a>(ctx: &'a super::Context<'_>, entry: &'a str) -> &'a str {
    ctx.entry(entry).map_or(entry, |e| e.display_name.as_str())
}

/// The legend of one series per (provenance, entry): "name (source)", a colour each, the
/// marker `marker` picks.
pub(crate) fn series_legend(
    ctx: &super::Context<'_>,
    series: &[(crate::metrics::Provenance, &str)],
    marker: impl Fn(crate::metrics::Provenance) -> Marker,
) -> Vec<LegendItem> {
    series
        .iter()
        .enumerate()
        .map(|(i, (prov, entry))| LegendItem {
            label: format!("{} ({prov})", display_name(ctx, entry)),
            color: series_color(i, series.len()),
            marker: marker(*prov),
        })
        .collect()
}

/// The marker of a provenance: circles for reported, squares for measured.
pub(crate) fn provenance_marker(p: crate::metrics::Provenance) -> Marker {
    match p {
        crate::metrics::Provenance::Reported => Marker::Circle,
        crate::metrics::Provenance::Measured => Marker::Square,
    }
}

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
        Marker::Dot => area.draw(&Circle::new((x, y), 3, color.filled())),
        Marker::Dotted => (0..4).try_for_each(|k| {
            let x0 = x - 12 + 7 * k;
            area.draw(&PathElement::new(
                vec![(x0, y), (x0 + 3, y)],
                color.stroke_width(1),
            ))
        }),
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

/// The 95% intervals of one plot: drawn as vertical bars with caps, in a point's colour, with
/// a white halo so they stay visible over other points, wide and thick enough to read where the
/// plot is scaled down to a phone's width. A bar that would not reach out of its marker is not
/// drawn (the hover text gives it); [`Intervals::note`] says how many.
#[derive(Debug, Default)]
pub(crate) struct Intervals {
    drawn: usize,
    hidden: usize,
    /// The widest hidden interval, relative to its value: (hi - lo) / 2 / value.
    widest_hidden: f64,
}

/// Pixels a bar must span to show beyond a marker (10 px and its outline).
const MARKER_SPAN: i32 = 12;

impl Intervals {
    /// Draws the interval `[lo, hi]` of `value`, whose pixels are `top` (at `hi`) and
    /// `bottom` (at `lo`).
    pub fn draw(
        &mut self,
        area: &Area<'_>,
        color: RGBColor,
        ([lo, hi], value): ([f64; 2], f64),
        (top, bottom): ((i32, i32), (i32, i32)),
        plot: &str,
    ) -> Result<(), SiteError> {
        if bottom.1 - top.1 <= MARKER_SPAN {
            self.hidden += 1;
            self.widest_hidden = self.widest_hidden.max((hi - lo) / 2.0 / value);
            return Ok(());
        }
        self.drawn += 1;
        let x = top.0;
        let cap = 7;
        let lines = [
            vec![(x, top.1), (x, bottom.1)],
            vec![(x - cap, top.1), (x + cap, top.1)],
            vec![(x - cap, bottom.1), (x + cap, bottom.1)],
        ];
        for style in [WHITE.stroke_width(5), color.stroke_width(2)] {
            for l in &lines {
                area.draw(&PathElement::new(l.clone(), style))
                    .map_err(|e| plot_error(plot, e))?;
            }
        }
        Ok(())
    }

    /// What a reader cannot see on the plot: the intervals too narrow to draw.
    pub fn note(&self) -> String {
        if self.hidden == 0 {
            return String::new();
        }
        format!(
            "{} of {} intervals are narrower than their markers (the widest ±{:.1}% of its speedup) and are not drawn.",
            self.hidden,
            self.hidden + self.drawn,
            self.widest_hidden * 100.0
        )
    }
}

/// The hover text of an interval: ` (95% interval a–b)`, or nothing.
pub(crate) fn interval_text(ci: Option<[f64; 2]>) -> String {
    ci.map_or(String::new(), |[lo, hi]| {
        format!(
            " (95% interval {}–{})",
            super::format::speedup(lo),
            super::format::speedup(hi)
        )
    })
}

/// Characters of a legend line before it wraps (the legend column fits about this many).
const LEGEND_CHARS: usize = 30;
const LEGEND_LINE: i32 = 17;
const LEGEND_GAP: i32 = 4;
const LEGEND_TOP: i32 = 70;

/// `label` broken at spaces into lines of at most `n` characters (a longer word is cut).
pub(crate) fn wrap(label: &str, n: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in label.split_whitespace() {
        let mut word = word.to_string();
        loop {
            let len = line.chars().count();
            let wlen = word.chars().count();
            if len > 0 && len + 1 + wlen <= n {
                line.push(' ');
                line.push_str(&word);
                break;
            }
            if len > 0 {
                lines.push(std::mem::take(&mut line));
            }
            if wlen <= n {
                line = word;
                break;
            }
            let head: String = word.chars().take(n).collect();
            word = word.chars().skip(n).collect();
            lines.push(head);
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// The height in pixels of the legend of `items`.
pub(crate) fn legend_height(items: &[LegendItem]) -> u32 {
    let lines: usize = items
        .iter()
        .map(|i| wrap(&i.label, LEGEND_CHARS).len())
        .sum();
    (LEGEND_TOP + lines as i32 * LEGEND_LINE + items.len() as i32 * LEGEND_GAP + 10) as u32
}

/// The height of a plot whose legend is `items`: [`HEIGHT`], or more where the full legend
/// needs it (a legend is never cut short).
pub(crate) fn plot_height(items: &[LegendItem]) -> u32 {
    HEIGHT.max(legend_height(items))
}

/// Draws a legend (title, then every item, its label wrapped) in `area`, which is at least
/// [`legend_height`] tall.
fn draw_legend(
    area: &Area<'_>,
    title: &str,
    items: &[LegendItem],
    plot: &str,
) -> Result<(), SiteError> {
    let style = TextStyle::from((FONT, 13).into_font()).color(&BLACK);
    let bold = TextStyle::from((FONT, 13).into_font().style(FontStyle::Bold)).color(&BLACK);
    for (i, line) in wrap(title, LEGEND_CHARS + 6).iter().enumerate() {
        area.draw(&Text::new(
            line.clone(),
            (8, 30 + 16 * i as i32),
            bold.clone(),
        ))
        .map_err(|e| plot_error(plot, e))?;
    }
    let mut y = LEGEND_TOP;
    for item in items {
        draw_marker(area, item.marker, item.color, (22, y), plot)?;
        for line in wrap(&item.label, LEGEND_CHARS) {
            area.draw(&Text::new(line, (40, y - 7), style.clone()))
                .map_err(|e| plot_error(plot, e))?;
            y += LEGEND_LINE;
        }
        y += LEGEND_GAP;
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

/// A point's hover text: an invisible circle over pixel `(x, y)` whose `<title>` the browser
/// shows (plotters draws no titles, so they are laid over its drawing).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tip {
    pub at: (i32, i32),
    pub text: String,
}

/// The hover texts of one plot, collected while drawing.
#[derive(Debug, Default)]
pub(crate) struct Tips(Vec<Tip>);

impl Tips {
    pub fn add(&mut self, at: (i32, i32), text: impl Into<String>) {
        self.0.push(Tip {
            at,
            text: text.into(),
        });
    }

    /// The overlay: one group of transparent circles, each with its escaped `<title>`.
    fn markup(&self) -> String {
        if self.0.is_empty() {
            return String::new();
        }
        let mut out = String::from("<g class=\"tips\" fill=\"#000\" fill-opacity=\"0\">\n");
        for t in &self.0 {
            out.push_str(&format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"7\"><title>{}</title></circle>\n",
                t.at.0,
                t.at.1,
                xml_escape(&t.text)
            ));
        }
        out.push_str("</g>\n");
        out
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Runs `draw` on a fresh drawing area `height` pixels tall and returns the SVG, with the
/// hover texts `draw` collected laid over it.
pub(crate) fn render(
    name: &str,
    title: &str,
    height: u32,
    draw: impl FnOnce(&Area<'_>, &mut Tips) -> Result<(), SiteError>,
) -> Result<Plot, SiteError> {
    let mut buf = String::new();
    let mut tips = Tips::default();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_error(name, e))?;
        draw(&root, &mut tips)?;
        root.present().map_err(|e| plot_error(name, e))?;
    }
    if let Some(end) = buf.rfind("</svg>") {
        buf.insert_str(end, &tips.markup());
    }
    Ok(Plot {
        name: name.to_string(),
        title: title.to_string(),
        svg: Svg(accessible(buf, title)),
        note: String::new(),
    })
}

/// The SVG with `role="img"`, an `aria-label` and a `<title>` (its text alternative, also
/// what a browser shows on hover), all from `title`, XML-escaped.
fn accessible(svg: String, title: &str) -> String {
    let text = xml_escape(title);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_wrap_and_keep_every_character() {
        assert_eq!(wrap("a b c", 3), ["a b", "c"]);
        assert_eq!(wrap("abcdefg", 3), ["abc", "def", "g"]);
        assert_eq!(wrap("", 3), [""]);
        let long = "Hand-written sm_90a (TMA + wgmma, a long name) (measured)";
        let lines = wrap(long, LEGEND_CHARS);
        assert!(lines.iter().all(|l| l.chars().count() <= LEGEND_CHARS));
        assert_eq!(lines.join(" "), long);
    }

    /// A bar taller than a marker is drawn (halo and coloured line, with caps); one within a
    /// marker is not, and the note counts it.
    #[test]
    fn intervals_are_drawn_where_they_show() {
        let mut intervals = Intervals::default();
        let plot = render("t", "t", 100, |root, _| {
            let c = RGBColor(0x12, 0x34, 0x56);
            intervals.draw(root, c, ([1.0, 3.0], 2.0), ((50, 20), (50, 80)), "t")?;
            intervals.draw(root, c, ([1.9, 2.1], 2.0), ((90, 45), (90, 52)), "t")
        })
        .expect("draws");
        let svg = plot.svg.as_str();
        assert!(svg.contains(r##"stroke="#123456" stroke-width="2" points="50,20 50,80 "##));
        assert!(svg.contains(r##"stroke="#123456" stroke-width="2" points="43,80 57,80 "##));
        assert!(svg.contains(r##"stroke="#FFFFFF" stroke-width="5" points="50,20 50,80 "##));
        assert!(!svg.contains("points=\"90,"), "{svg}");
        assert_eq!(
            intervals.note(),
            "1 of 2 intervals are narrower than their markers (the widest ±5.0% of its speedup) and are not drawn."
        );
    }

    #[test]
    fn tips_are_escaped() {
        let mut t = Tips::default();
        t.add((1, 2), "<b>&\"");
        assert!(t.markup().contains("<title>&lt;b&gt;&amp;&quot;</title>"));
    }
}
