//! Checks a rendered site's links: every `href`/`src` (and CSS `url()`) is relative and
//! resolves to a file of the site (and, with a `#fragment`, to an element id there); ids are
//! unique within a page (the page script finds tables by id); no URL
//! with a scheme or host and no absolute path appears in an attribute, a stylesheet, a script
//! or the text of a page. Stored artifacts shown verbatim (`<pre class="code">` blocks: PTX,
//! prompts, responses, logs) are exempt from the text scan: they are the hashed bytes an
//! auditor must see unchanged, and a compiler may have written a path into them; so are the
//! stored objects under `objects/`, which are those bytes themselves. The one exception is the
//! outside links a manifest names on purpose (`site.repository`, `site.paper`), which
//! [`check_allowing`] is given.

use std::collections::{BTreeMap, BTreeSet};

use super::Pages;

/// One problem with the output.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LinkProblem {
    pub page: String,
    pub target: String,
    pub kind: &'static str,
}

impl std::fmt::Display for LinkProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} `{}`", self.page, self.kind, self.target)
    }
}

/// The SVG namespace: the only URL allowed, and only as `xmlns` in standalone SVG files.
const SVG_NS: &str = "xmlns=\"http://www.w3.org/2000/svg\"";

/// Top-level folders whose absolute paths (`/NAME/...`) mark a path of the building machine.
const MACHINE_ROOTS: [&str; 5] = ["home", "root", "work", "tmp", "Users"];

/// Values of `name="…"` attributes in `html`, unescaped for `&amp;`.
fn attribute_values(html: &str, name: &str) -> Vec<String> {
    let needle = format!(" {name}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&needle) {
        let after = &rest[i + needle.len()..];
        let Some(end) = after.find('"') else { break };
        out.push(after[..end].replace("&amp;", "&").replace("&#38;", "&"));
        rest = &after[end..];
    }
    out
}

/// `html` without the content of `<pre class="code">` blocks (artifacts shown verbatim).
fn without_artifacts(html: &str) -> String {
    const OPEN: &str = "<pre class=\"code\">";
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(i) = rest.find(OPEN) {
        out.push_str(&rest[..i]);
        match rest[i..].find("</pre>") {
            Some(j) => rest = &rest[i + j + "</pre>".len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Element ids declared in `html`.
fn ids(html: &str) -> BTreeSet<String> {
    attribute_values(html, "id").into_iter().collect()
}

/// Resolves `target` relative to `page` (both site paths); `None` when it leaves the site.
fn resolve(page: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = page.split('/').collect();
    parts.pop();
    for seg in target.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

fn has_scheme(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    lower.starts_with("//")
        || lower.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
}

/// Every problem with the links of `pages`, sorted.
pub fn check(pages: &Pages) -> Vec<LinkProblem> {
    check_allowing(pages, &[])
}

/// [`check`], with the exact outside links in `allowed` accepted as `href`s and in text.
pub fn check_allowing(pages: &Pages, allowed: &[String]) -> Vec<LinkProblem> {
    let mut problems = BTreeSet::new();
    let mut id_cache: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut push = |page: &str, target: &str, kind: &'static str| {
        problems.insert(LinkProblem {
            page: page.to_string(),
            target: target.chars().take(120).collect(),
            kind,
        });
    };
    for (path, bytes) in &pages.files {
        if path.starts_with(super::paths::OBJECTS) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            continue;
        };
        let is_svg = path.ends_with(".svg");
        let mut scan = if is_svg {
            text.replacen(SVG_NS, "", 1)
        } else {
            without_artifacts(text)
        };
        for a in allowed {
            scan = scan.replace(&format!("\"{a}\""), "\"\"");
        }
        for scheme in ["http://", "https://", "file://", "ftp://"] {
            if let Some(i) = scan.to_ascii_lowercase().find(scheme) {
                push(path, &scan[i..(i + 60).min(scan.len())], "external URL");
            }
        }
        let machine_paths = MACHINE_ROOTS
            .iter()
            .map(|r| format!("/{r}/"))
            .chain(std::iter::once("C:\\".to_string()));
        for m in machine_paths {
            if let Some(i) = scan.find(&m) {
                push(path, &scan[i..(i + 60).min(scan.len())], "machine path");
            }
        }
        if path.ends_with(".css") && scan.contains("url(") {
            push(path, "url(", "stylesheet fetches a resource");
        }
        if path.ends_with(".js") {
            for api in [
                "fetch(",
                "XMLHttpRequest",
                "import(",
                "WebSocket",
                "sendBeacon",
            ] {
                if scan.contains(api) {
                    push(path, api, "script makes requests");
                }
            }
        }
        if !path.ends_with(".html") {
            continue;
        }
        let mut seen_ids = BTreeSet::new();
        for id in attribute_values(text, "id") {
            if !seen_ids.insert(id.clone()) {
                push(path, &id, "duplicate id");
            }
        }
        let mut targets = attribute_values(text, "href");
        targets.extend(attribute_values(text, "src"));
        targets.extend(attribute_values(text, "action"));
        for t in targets {
            if t.is_empty() {
                push(path, &t, "empty link");
                continue;
            }
            if has_scheme(&t) {
                if !allowed.contains(&t) {
                    push(path, &t, "external URL");
                }
                continue;
            }
            if t.starts_with('/') || t.starts_with('\\') {
                push(path, &t, "absolute path");
                continue;
            }
            let (file, fragment) = match t.split_once('#') {
                Some((f, frag)) => (f, Some(frag)),
                None => (t.as_str(), None),
            };
            let file = file.split('?').next().unwrap_or("");
            let target_page = if file.is_empty() {
                Some(path.clone())
            } else {
                resolve(path, file)
            };
            let Some(target_page) = target_page else {
                push(path, &t, "leaves the site");
                continue;
            };
            let Some(target_bytes) = pages.files.get(&target_page) else {
                push(path, &t, "broken link");
                continue;
            };
            if let Some(frag) = fragment.filter(|f| !f.is_empty()) {
                let key = pages
                    .files
                    .get_key_value(&target_page)
                    .map_or("", |(k, _)| k.as_str());
                let known = id_cache
                    .entry(key)
                    .or_insert_with(|| ids(std::str::from_utf8(target_bytes).unwrap_or("")));
                if !known.contains(frag) {
                    push(path, &t, "missing anchor");
                }
            }
        }
    }
    problems.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(files: &[(&str, &str)]) -> Pages {
        Pages {
            files: files
                .iter()
                .map(|(p, b)| (p.to_string(), b.as_bytes().to_vec()))
                .collect(),
        }
    }

    #[test]
    fn finds_every_kind_of_problem() {
        let s = site(&[
            (
                "index.html",
                r#"<a href="task/a.html#x">a</a> <a href="missing.html">m</a> <a href="https://e.com">e</a> <a href="/abs">b</a> <img src="../up.png"> /home/me"#,
            ),
            (
                "task/a.html",
                r##"<p id="x"><a href="../index.html">i</a> <a href="#y">y</a></p><b id="x"></b>"##,
            ),
            (
                "plots/p.svg",
                r#"<svg xmlns="http://www.w3.org/2000/svg"></svg>"#,
            ),
        ]);
        let problems = check(&s);
        let kinds: Vec<(&str, &str)> = problems.iter().map(|p| (p.page.as_str(), p.kind)).collect();
        assert!(kinds.contains(&("index.html", "broken link")));
        assert!(kinds.contains(&("index.html", "external URL")));
        assert!(kinds.contains(&("index.html", "absolute path")));
        assert!(kinds.contains(&("index.html", "leaves the site")));
        assert!(kinds.contains(&("index.html", "machine path")));
        assert!(kinds.contains(&("task/a.html", "missing anchor")));
        assert!(kinds.contains(&("task/a.html", "duplicate id")));
        assert!(!kinds.iter().any(|(p, _)| *p == "plots/p.svg"));
        assert_eq!(
            resolve("record/x.html", "../task/a.html").as_deref(),
            Some("task/a.html")
        );
    }
}
