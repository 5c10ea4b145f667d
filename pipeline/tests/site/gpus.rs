//! An entry measured on two GPUs, as the site shows it: one entry page listing each GPU's rows
//! apart (anchored per GPU), a leaderboard row per GPU ranked among its GPU's rows, a matrix
//! row per GPU, plots and peak proxies per GPU, and every number with the GPU it was measured
//! on.

use ptxbench::site::format::opt_speedup;
use ptxbench::site::paths::slug;
use ptxbench::site::{Context, build, linkcheck};

use crate::{H100, H200, element, on_two_gpus, page};

/// The rows (`<tr ...>` to `</tr>`) of the table with id `id` on `html`.
fn rows<'a>(html: &'a str, id: &str) -> Vec<&'a str> {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table {id}"));
    let table = &html[start..start + html[start..].find("</table>").expect("table ends")];
    let body = &table[table.find("<tbody>").expect("a body")..];
    body.split("<tr").skip(1).collect()
}

#[test]
fn an_entry_measured_on_two_gpus_is_shown_per_gpu() {
    let speedups = [(H200, 2.0), (H100, 0.5)];
    let (_dir, input, entry, task) = on_two_gpus(speedups);
    let ctx = Context::new(&input).expect("context");
    let e = ctx.entry(&entry).expect("the entry");
    let arch = input.records[0].record.arch.to_string();
    let pages = build(&input).expect("builds");
    let problems = linkcheck::check(&pages);
    assert!(problems.is_empty(), "{problems:#?}");

    // One page for the entry, its per-task rows of each GPU apart, each anchored per GPU.
    let own: Vec<&String> = pages
        .files
        .keys()
        .filter(|p| p.starts_with(&format!("entry/{}", e.slug)))
        .collect();
    assert_eq!(own, [&format!("entry/{}.html", e.slug)]);
    let html = page(&pages, own[0]);
    for (gpu, s) in speedups {
        let row = element(
            html,
            &format!("id=\"{arch}-{}-{}\"", slug(gpu), slug(&task)),
            "</tr>",
        );
        assert!(row.contains(&format!("<small>{gpu}</small>")), "{row}");
        assert!(
            row.contains(&format!(">{}</a>", opt_speedup(Some(s)))),
            "{row}"
        );
        let other = if gpu == H100 { H200 } else { H100 };
        assert!(!row.contains(other), "{row}");
    }

    // The models' leaderboard: a row per GPU, each first among its GPU's rows; the caption
    // says the ranks are per GPU; the leader statement names the GPU of the row it picked.
    let arch_page = page(&pages, &format!("arch/{arch}.html"));
    let measured: Vec<&str> = rows(arch_page, &format!("lb-{arch}"))
        .into_iter()
        .filter(|r| r.contains("data-turn=\"1\""))
        .collect();
    assert_eq!(measured.len(), 2, "{measured:#?}");
    for gpu in [H100, H200] {
        let row = measured
            .iter()
            .find(|r| r.contains(&format!("<small>{gpu}</small>")))
            .unwrap_or_else(|| panic!("no row on {gpu}"));
        assert!(row.contains("class=\"rank\">1</td>"), "{row}");
    }
    let table = element(arch_page, &format!("id=\"lb-{arch}\""), "</thead>");
    assert!(
        table.contains(&format!(
            "measured here ({H100} and {H200}, ranked per GPU)"
        )),
        "{table}"
    );
    assert!(table.contains("rank among the rows of the same turn limit and GPU"));
    let leader = element(arch_page, "class=\"leader\"", "</p>");
    assert!(
        leader.contains(&format!("Best measured here: {}", e.display_name))
            && leader.contains(&format!("(measured, {H200})")),
        "{leader}"
    );

    // The speedup matrix: a row per GPU with its own number.
    let matrix: Vec<&str> = rows(arch_page, &format!("matrix-{arch}"))
        .into_iter()
        .filter(|r| r.contains("data-prov=\"measured\""))
        .collect();
    assert_eq!(matrix.len(), 2, "{matrix:#?}");
    for (gpu, s) in speedups {
        assert!(
            matrix
                .iter()
                .any(|r| r.contains(&format!("<small>{gpu}</small>"))
                    && r.contains(&opt_speedup(Some(s)))),
            "{gpu}: {matrix:#?}"
        );
    }

    // Plots: one panel per GPU, each naming its own GPU only.
    for gpu in [H100, H200] {
        let path = format!("plots/{arch}-best-speedup-measured-{}.svg", slug(gpu));
        let svg = page(&pages, &path);
        assert!(svg.contains(&format!("measured here, {gpu}")), "{path}");
        let other = if gpu == H100 { H200 } else { H100 };
        assert!(!svg.contains(other), "{path} names {other}");
    }

    // The library ceilings and the peak proxies are per GPU.
    let task_page = page(&pages, &format!("task/{}.html", slug(&task)));
    for gpu in [H100, H200] {
        assert!(
            task_page.contains(&format!("id=\"ceilings-{arch}-{}\"", slug(gpu))),
            "no ceilings on {gpu}"
        );
    }
    let peaks = element(
        page(&pages, "methodology.html"),
        "<h2 id=\"peak\">",
        "</table>",
    );
    for gpu in [H100, H200] {
        assert!(
            peaks.contains(&format!("<td>{arch}</td><td>{gpu}</td>")),
            "{peaks}"
        );
    }

    // The results download: a row per GPU, each naming one GPU.
    let csv = page(&pages, "data/results.csv");
    let mine: Vec<&str> = csv
        .lines()
        .filter(|l| l.starts_with(&format!("measured,{entry},")))
        .collect();
    for gpu in [H100, H200] {
        assert!(
            mine.iter()
                .any(|l| l.contains(&format!(",{arch},{gpu},{task},"))),
            "{gpu}: {mine:#?}"
        );
    }
    assert!(mine.iter().all(|l| !l.contains(", NVIDIA")), "{mine:#?}");
}
