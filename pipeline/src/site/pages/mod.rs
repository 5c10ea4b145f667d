//! Page view models and their templates (site/templates/). A view model holds only
//! preformatted strings and relative links, so templates only loop and interpolate; askama
//! escapes everything they print (with [`super::escape::Html`]) except
//! [`super::plots::Svg`].

pub mod arch;
pub mod blob;
pub mod ceilings;
pub mod downloads;
pub mod entry;
pub mod harness;
pub mod index;
pub mod leaderboard;
pub mod methodology;
pub mod pending;
pub mod record;
pub mod run;
pub mod task;
pub mod text;
pub mod trajectory;

use super::context::Context;
use super::format;
use super::paths;
use super::plots::Plot;
use crate::metrics::Provenance;

/// What every page has: titles, the way back to the root, navigation, footer.
#[derive(Debug, Clone)]
pub struct Page {
    pub title: String,
    pub site_title: String,
    /// `""` or `"../"`: prefix of every site-absolute path on this page.
    pub root: String,
    pub nav: Vec<NavLink>,
    pub footer: String,
    /// The manifest's `site.repository` and `site.paper` links (empty: not given).
    pub repository: String,
    pub paper: String,
    /// The manifest's `site.code_release`, `site.citation` and `site.date` (empty: not given).
    pub code_release: String,
    pub citation: String,
    pub date: String,
    /// The data page's "install and reproduce" section, from this page.
    pub reproduce: String,
}

#[derive(Debug, Clone)]
pub struct NavLink {
    pub label: String,
    pub href: String,
    pub current: bool,
}

impl Page {
    /// The frame of the page at site path `path`.
    pub fn new(ctx: &Context<'_>, path: &str, title: impl Into<String>) -> Page {
        let mut nav = vec![NavLink {
            label: "Overview".into(),
            href: paths::link(path, paths::INDEX),
            current: path == paths::INDEX,
        }];
        for a in &ctx.archs {
            let target = paths::arch(a);
            nav.push(NavLink {
                label: format!("{a} leaderboard"),
                href: paths::link(path, &target),
                current: path == target,
            });
        }
        for (label, target) in [
            ("Data", paths::DATA),
            ("Methodology", paths::METHODOLOGY),
            ("Harness tests", paths::HARNESS_TESTS),
        ] {
            nav.push(NavLink {
                label: label.into(),
                href: paths::link(path, target),
                current: path == target,
            });
        }
        Page {
            title: title.into(),
            site_title: ctx.input.manifest.site.title.clone(),
            root: paths::root_of(path),
            nav,
            footer: ctx.footer.clone(),
            repository: ctx
                .input
                .manifest
                .site
                .repository
                .clone()
                .unwrap_or_default(),
            paper: ctx.input.manifest.site.paper.clone().unwrap_or_default(),
            code_release: ctx
                .input
                .manifest
                .site
                .code_release
                .clone()
                .unwrap_or_default(),
            citation: ctx.input.manifest.site.citation.clone().unwrap_or_default(),
            date: ctx.input.manifest.site.date.clone().unwrap_or_default(),
            reproduce: paths::link(path, &format!("{}#reproduce", paths::DATA)),
        }
    }
}

/// A table cell: the text shown, the key the page script sorts by, and optionally the page
/// that holds its evidence and a second, smaller line (an interval).
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub text: String,
    pub v: String,
    /// Where the number comes from (a record, an entry's task); empty: no link.
    pub href: String,
    /// Shown after the text in small type; empty: nothing.
    pub note: String,
}

impl Cell {
    /// The same cell, linked to `href` (a page relative to the one it is on).
    pub fn linked(mut self, href: impl Into<String>) -> Cell {
        self.href = href.into();
        self
    }

    /// The same cell with a note (e.g. a confidence interval) after its text.
    pub fn with_note(mut self, note: impl Into<String>) -> Cell {
        self.note = note.into();
        self
    }

    pub fn text(text: impl Into<String>) -> Cell {
        let text = text.into();
        Cell {
            v: text.to_lowercase(),
            text,
            ..Cell::default()
        }
    }

    pub fn percent(x: Option<f64>) -> Cell {
        Cell {
            text: format::opt_percent(x),
            v: format::sort_key(x),
            ..Cell::default()
        }
    }

    /// A rate that was not measured (as opposed to one that is zero).
    pub fn not_measured() -> Cell {
        Cell {
            text: format::NOT_MEASURED.into(),
            v: String::new(),
            ..Cell::default()
        }
    }

    pub fn speedup(x: Option<f64>) -> Cell {
        Cell {
            text: format::opt_speedup(x),
            v: format::sort_key(x),
            ..Cell::default()
        }
    }

    pub fn count(n: u32) -> Cell {
        Cell {
            text: format::count(u64::from(n)),
            v: n.to_string(),
            ..Cell::default()
        }
    }

    pub fn count_rate(c: u32, n: u32) -> Cell {
        Cell {
            text: format::count_rate(c, n),
            v: format::sort_key((n > 0).then(|| f64::from(c) / f64::from(n))),
            ..Cell::default()
        }
    }

    /// [`Cell::count_rate`] with its 95% Wilson score interval over the `n` trajectories.
    pub fn count_rate_ci(c: u32, n: u32) -> Cell {
        let cell = Cell::count_rate(c, n);
        match crate::metrics::estimator::wilson95(c, n) {
            Some([lo, hi]) => {
                cell.with_note(format!("95% CI {:.1}–{:.1}%", 100.0 * lo, 100.0 * hi))
            }
            None => cell,
        }
    }
}

/// A key and its value, for definition lists.
#[derive(Debug, Clone)]
pub struct Fact {
    pub key: String,
    pub value: String,
}

/// A link with its text.
#[derive(Debug, Clone, Default)]
pub struct Link {
    pub text: String,
    pub href: String,
}

/// The bundle of `run` the site makes (a zip of its closure), linked from page `from`; `None`
/// for a run too large to bundle here ([`crate::site::MAX_BUNDLED_RECORDS`]).
pub fn bundle_link(run: &crate::site::input::LoadedRun, from: &str) -> Option<Link> {
    (run.run.record_digests.len() <= crate::site::MAX_BUNDLED_RECORDS).then(|| Link {
        text: format!("run-{}.zip", run.digest.short(12)),
        href: paths::link(from, &paths::run_bundle(&run.digest)),
    })
}

/// A provenance badge's class and text (`reported` / `measured`).
pub fn badge(p: Provenance) -> &'static str {
    p.as_str()
}

/// A plot as a page shows it: inline SVG and a link to the file.
#[derive(Debug, Clone)]
pub struct PlotView {
    pub title: String,
    pub svg: super::plots::Svg,
    pub href: String,
    pub caption: String,
}

impl PlotView {
    pub fn new(plot: &Plot, from: &str, caption: impl Into<String>) -> PlotView {
        PlotView {
            title: plot.title.clone(),
            svg: plot.svg.inline(),
            href: paths::link(from, &paths::plot(&plot.name)),
            caption: if plot.note.is_empty() {
                caption.into()
            } else {
                format!("{} {}", caption.into(), plot.note)
            },
        }
    }
}

/// The label of a verdict class, for a CSS class: known classes only, else `other`.
pub fn verdict_class(v: &str) -> &'static str {
    match v {
        "correct" => "correct",
        "extraction" => "extraction",
        "compilation" => "compilation",
        "runtime" => "runtime",
        "timeout" => "timeout",
        "not evaluated" => "unevaluated",
        "numerical" => "numerical",
        _ => "other",
    }
}
