//! Page paths and the relative links between them. Every link a page holds is relative to
//! that page (`../task/x.html`), so the site works from any sub-path (GitHub Pages serves a
//! project under `/<repo>/`) and from the file system.

use std::collections::BTreeMap;

use crate::digest::Digest;

pub const INDEX: &str = "index.html";
pub const METHODOLOGY: &str = "methodology.html";
pub const HARNESS_TESTS: &str = "harness-tests.html";
pub const DATA: &str = "data.html";
pub const STYLE: &str = "static/style.css";
pub const SCRIPT: &str = "static/site.js";
pub const FAVICON: &str = "static/favicon.svg";

pub fn arch(arch: &str) -> String {
    format!("arch/{arch}.html")
}

pub fn task(task: &str) -> String {
    format!("task/{}.html", slug(task))
}

pub fn entry(slug: &str) -> String {
    format!("entry/{slug}.html")
}

/// The anchor of a task's rows on one GPU on an entry's page (`sm_90a-nvidia-h200-gemm_x`;
/// `sm_90a-gemm_x` where no GPU was recorded): an entry measured on two GPUs has rows of each.
pub fn task_anchor(arch: &str, gpu: &str, task: &str) -> String {
    if gpu.is_empty() {
        format!("{arch}-{}", slug(task))
    } else {
        format!("{arch}-{}-{}", slug(gpu), slug(task))
    }
}

/// A task's rows on one GPU on an entry's page.
pub fn entry_task(slug: &str, arch: &str, gpu: &str, task: &str) -> String {
    format!("{}#{}", entry(slug), task_anchor(arch, gpu, task))
}

pub fn record(digest: &Digest) -> String {
    format!("record/{digest}.html")
}

pub fn blob(digest: &Digest) -> String {
    format!("blob/{digest}.html")
}

/// A trajectory's page, named by its first record.
pub fn trajectory(root: &Digest) -> String {
    format!("trajectory/{root}.html")
}

/// The folder of stored objects as their exact bytes (`b3sum` of a file is its name).
pub const OBJECTS: &str = "objects/";

/// A stored object, byte for byte.
pub fn object(digest: &Digest) -> String {
    format!("{OBJECTS}{digest}")
}

pub fn run(digest: &Digest) -> String {
    format!("run/{digest}.html")
}

/// The bundle of one run of the manifest (its run object and closure, see `bundle::run_bundle`).
pub fn run_bundle(digest: &Digest) -> String {
    format!("data/bundles/run-{digest}.zip")
}

pub fn plot(name: &str) -> String {
    format!("plots/{name}.svg")
}

/// The prefix that leads from page `from` back to the site root (`""` or `"../"`).
pub fn root_of(from: &str) -> String {
    link(from, "")
}

/// The link from page `from` to page `to` (both site paths).
pub fn link(from: &str, to: &str) -> String {
    link_parts(from, &[to])
}

/// [`link`] from `from` to the page or file `parts` make when joined (`["record/", hex,
/// ".html"]`), built by hand in one allocation: a large site makes millions of links.
pub fn link_parts(from: &str, parts: &[&str]) -> String {
    let up = from.bytes().filter(|&b| b == b'/').count();
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let mut out = String::with_capacity(3 * up + len);
    for _ in 0..up {
        out.push_str("../");
    }
    for p in parts {
        out.push_str(p);
    }
    out
}

/// The longest slug: a page's file name (`<slug>.html`) stays far under the 255 bytes a file
/// system allows.
pub const SLUG_MAX: usize = 96;

/// A file-name-safe form of a name: lowercase ASCII letters and digits, other runs of
/// characters become one `-`. Never empty, at most [`SLUG_MAX`] bytes: a longer one is cut
/// and ends in `-` and a short hash of the whole name, so it stays distinct and the same on
/// every build.
pub fn slug(name: &str) -> String {
    let mut out = full_slug(name);
    if out.len() > SLUG_MAX {
        let hash = Digest::of(name.as_bytes()).short(8);
        // ASCII only: any byte index is a character boundary.
        out.truncate(SLUG_MAX - hash.len() - 1);
        while out.ends_with('-') {
            out.pop();
        }
        out.push('-');
        out.push_str(&hash);
    }
    out
}

/// [`slug`] without the length bound.
fn full_slug(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        out.push('x');
    }
    out
}

/// Unique slugs for `names` (sorted, unique): a slug two names share gets a short hash of the
/// name appended, so every name keeps the same slug however many others there are.
pub fn unique_slugs<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, String> {
    let names: Vec<&str> = names.into_iter().collect();
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for n in &names {
        *count.entry(slug(n)).or_default() += 1;
    }
    names
        .iter()
        .map(|n| {
            let s = slug(n);
            let s = if count.get(&s).copied().unwrap_or(0) > 1 {
                format!("{s}-{}", Digest::of(n.as_bytes()).short(8))
            } else {
                s
            };
            (n.to_string(), s)
        })
        .collect()
}

/// The site path of a kernel source file published from the repository
/// ([`super::sources`]): plain text, named by its digest.
pub fn source_file(d: &Digest) -> String {
    format!("source/{}.txt", d.hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_relative() {
        assert_eq!(root_of("index.html"), "");
        assert_eq!(link("record/ab.html", "task/t.html"), "../task/t.html");
        assert_eq!(link("index.html", "static/style.css"), "static/style.css");
        let d = Digest::of(b"x");
        let hex = d.hex();
        for from in ["index.html", "record/ab.html", "a/b/c.html"] {
            assert_eq!(
                link_parts(from, &["record/", &hex, ".html"]),
                link(from, &record(&d))
            );
            assert_eq!(link_parts(from, &[OBJECTS, &hex]), link(from, &object(&d)));
        }
    }

    #[test]
    fn slugs_are_safe_and_unique() {
        assert_eq!(slug("Claude Opus 4.8"), "claude-opus-4-8");
        assert_eq!(
            slug("Qwen3.6-27B + retrieved repair notes"),
            "qwen3-6-27b-retrieved-repair-notes"
        );
        assert_eq!(slug("../../etc"), "etc");
        assert_eq!(slug("!!!"), "x");
        let m = unique_slugs(["A b", "a-b", "c"]);
        assert_ne!(m["A b"], m["a-b"]);
        assert_eq!(m["c"], "c");
        assert!(m["A b"].starts_with("a-b-"));
    }

    #[test]
    fn issue_41_long_names_get_bounded_distinct_stable_slugs() {
        let long = "Model ".repeat(50);
        let other = format!("{long}v2");
        let s = slug(&long);
        assert!(s.len() <= SLUG_MAX, "{} bytes", s.len());
        assert!(s.starts_with("model-model-"), "{s}");
        assert!(s.ends_with(&Digest::of(long.as_bytes()).short(8)), "{s}");
        assert_eq!(s, slug(&long));
        assert_ne!(s, slug(&other));
        assert!(task(&"t".repeat(300)).len() < 120);
        // Short names keep their slug.
        assert_eq!(slug(&"a".repeat(SLUG_MAX)), "a".repeat(SLUG_MAX));
    }
}
