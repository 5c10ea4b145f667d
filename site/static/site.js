// PTXBench leaderboard: sortable and filterable tables. No network, no dependencies.
// Tables with class "sortable" sort by a column when its header is clicked (cells carry
// their sort key in data-v; empty keys sort last). A ".filters[data-for=ID]" block filters
// the rows of table ID by text (data-text), source (data-prov) and turn limit (data-turn).
// Filters and the sort column are kept in the page's query string (`?ID.text=…&ID.sort=3d`),
// so a filtered, sorted view can be linked to and survives a reload.
// Opening a page with #selftest runs a self-check and writes its result into the page
// (used by site/tests/browser.sh).
(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message || e));
  });

  function key(row, col, numeric) {
    var cell = row.cells[col];
    var v = cell ? cell.getAttribute("data-v") : "";
    if (v === null) v = cell ? cell.textContent.trim() : "";
    if (v === "") return null;
    if (numeric) {
      var n = parseFloat(v);
      return isNaN(n) ? null : n;
    }
    return v.toLowerCase();
  }

  // The query string: read once, rewritten (without reloading) whenever a table changes.
  var params = new URLSearchParams(window.location.search);
  function remember(name, value, dflt) {
    if (value === "" || value === dflt) params.delete(name); else params.set(name, value);
    if (!window.history || !window.history.replaceState) return;
    var q = params.toString();
    try {
      window.history.replaceState(null, "", window.location.pathname + (q ? "?" + q : "") + window.location.hash);
    } catch (e) { /* pages opened from disk may refuse; the view still works */ }
  }

  function sortTable(table, col, descending) {
    var th = table.tHead.rows[0].cells[col];
    var numeric = th.getAttribute("data-type") === "num";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.forEach(function (r, i) { r._index = i; });
    rows.sort(function (a, b) {
      var x = key(a, col, numeric), y = key(b, col, numeric);
      if (x === null && y === null) return a._index - b._index;
      if (x === null) return 1;
      if (y === null) return -1;
      var c = x < y ? -1 : x > y ? 1 : 0;
      if (descending) c = -c;
      return c !== 0 ? c : a._index - b._index;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) {
      c.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    if (table.id) remember(table.id + ".sort", col + (descending ? "d" : "a"), "");
  }

  function initSort(table) {
    if (!table.tHead || !table.tBodies.length) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.tabIndex = 0;
      th.classList.add("sort");
      th.title = (th.title ? th.title + " — " : "") + "click to sort";
      var go = function (e) {
        if (e.target && e.target.tagName === "A") return;
        var desc = th.getAttribute("aria-sort") === "ascending";
        sortTable(table, col, desc);
      };
      th.addEventListener("click", go);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(e); }
      });
    });
    var saved = table.id ? params.get(table.id + ".sort") : null;
    var m = saved && /^(\d+)([ad])$/.exec(saved);
    if (m && +m[1] < table.tHead.rows[0].cells.length) sortTable(table, +m[1], m[2] === "d");
  }

  function applyFilters(box) {
    var table = document.getElementById(box.getAttribute("data-for"));
    if (!table || !table.tBodies.length) return;
    var get = function (name) {
      var el = box.querySelector("[data-filter=" + name + "]");
      return el ? el.value.trim().toLowerCase() : "";
    };
    var text = get("text"), prov = get("prov"), turn = get("turn");
    var rows = table.tBodies[0].rows, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      var ok = true;
      if (text && (r.getAttribute("data-text") || r.textContent.toLowerCase()).indexOf(text) < 0) ok = false;
      if (prov && prov !== "all" && r.hasAttribute("data-prov") && r.getAttribute("data-prov") !== prov) ok = false;
      if (turn && turn !== "all" && r.hasAttribute("data-turn") && r.getAttribute("data-turn") !== turn) ok = false;
      r.hidden = !ok;
      if (ok) shown++;
    }
    var out = box.querySelector(".shown");
    if (out) out.textContent = shown + " of " + rows.length + " rows";
    var id = box.getAttribute("data-for");
    Array.prototype.forEach.call(box.querySelectorAll("[data-filter]"), function (el) {
      var d = el.getAttribute("data-default");
      remember(id + "." + el.getAttribute("data-filter"), el.value.trim(), d === null ? (el.tagName === "SELECT" ? "all" : "") : d);
    });
  }

  function initFilters(box) {
    Array.prototype.forEach.call(box.querySelectorAll("[data-filter]"), function (el) {
      var d = el.getAttribute("data-default");
      if (d !== null) el.value = d;
      var saved = params.get(box.getAttribute("data-for") + "." + el.getAttribute("data-filter"));
      if (saved !== null) {
        el.value = saved;
        // A select keeps its value only if it has that option.
        if (el.tagName === "SELECT" && el.value !== saved && d !== null) el.value = d;
      }
      el.addEventListener("input", function () { applyFilters(box); });
      el.addEventListener("change", function () { applyFilters(box); });
    });
    applyFilters(box);
  }

  function visible(table) {
    return Array.prototype.filter.call(table.tBodies[0].rows, function (r) { return !r.hidden; });
  }

  // What readers met on the site (issue 44): a record that was never evaluated must not look
  // measured; every page leads to the code, the install steps and (record and run pages) the
  // run's bundle; on a narrow screen nothing is squeezed or cut off.
  function readerChecks(check) {
    var lede = document.querySelector("[data-evaluated]");
    if (lede) {
      var evaluated = lede.getAttribute("data-evaluated") === "true";
      var measured = lede.querySelector(".badge.measured"), unevaluated = lede.querySelector(".badge.unevaluated");
      check("a record's badge says whether it was evaluated", evaluated ? (measured && !unevaluated) : (!measured && unevaluated),
        "evaluated=" + evaluated);
      if (!evaluated) {
        var verdicts = Array.prototype.map.call(document.querySelectorAll(".verdict"), function (v) { return v.textContent.trim(); });
        check("an unevaluated record shows no verdict of an evaluation", verdicts.every(function (v) { return v === "not evaluated"; }), verdicts.join(","));
      }
    }
    // Issue 59, item 10: work that was not evaluated is its own state: each pending row says
    // so, and no pending entry is a measured row or named in the headline.
    var pending = Array.prototype.map.call(document.querySelectorAll("tr.pending-row"), function (tr) {
      check("a pending row is marked not evaluated", tr.querySelector(".badge.unevaluated") && !tr.querySelector(".badge.measured"), tr.textContent.trim());
      return tr.querySelector("td.name a").textContent.trim();
    });
    if (pending.length) {
      var leaders = Array.prototype.map.call(document.querySelectorAll(".leader"), function (p) { return p.textContent; }).join(" ");
      var named = pending.filter(function (n) { return /Best measured here/.test(leaders) && leaders.indexOf("Best measured here: " + n + ",") >= 0; });
      check("no pending entry is the best measured", named.length === 0, named.join(", "));
      var rows = Array.prototype.filter.call(document.querySelectorAll("table.leaderboard tbody tr[data-prov=measured]"), function (tr) {
        var name = tr.querySelector("td.name");
        return name && pending.indexOf(name.textContent.trim()) >= 0;
      });
      check("no pending entry has a measured row", rows.length === 0, rows.length + " rows");
    }
    // Issue 59, item 1: every reported row an entry's page shows links to the stored file and
    // line it comes from.
    var published = document.getElementById("published-runs");
    if (published) {
      var untraced = Array.prototype.filter.call(published.tBodies[0].rows, function (tr) {
        var a = tr.querySelectorAll(".source-lines a");
        return a.length === 0 || Array.prototype.some.call(a, function (x) { return !/objects\/[0-9a-f]{64}$/.test(x.getAttribute("href")) || !/:\d+$/.test(x.textContent); });
      });
      check("every reported row links to its file and line", untraced.length === 0, untraced.length + " rows without");
    }
    // Item 4: a task page's results hold both architectures: rows of one entry, source and
    // turn limit are told apart by their arch and GPU.
    var results = document.getElementById("task-results");
    if (results) {
      var seen = {}, clash = [];
      Array.prototype.forEach.call(results.tBodies[0].rows, function (tr) {
        var c = tr.cells, arch = tr.querySelector(".arch-gpu");
        var k = [c[0].textContent.trim(), tr.getAttribute("data-prov"), tr.getAttribute("data-turn"), arch ? arch.textContent.trim() : ""].join("|");
        if (seen[k]) clash.push(k);
        seen[k] = true;
      });
      check("task rows of one entry, source and turn limit name their arch and GPU", clash.length === 0, clash.slice(0, 2).join("; "));
    }
    // Item 7: the page says no model was measured here exactly when no measured models' table
    // is on it.
    var none = document.querySelector(".no-model-measured");
    var measuredModels = document.querySelectorAll("table.leaderboard[id^='lb-sm']");
    if (document.querySelector("table.leaderboard") && !document.querySelector("[data-evaluated]")) {
      var onIndexOrArch = document.querySelector("p.leader, p.legend.scope");
      if (onIndexOrArch) {
        check("'no model measured here' is said exactly when no model's row is measured", !!none === (measuredModels.length === 0), (none ? "said" : "not said") + ", " + measuredModels.length + " measured models' tables");
      }
    }
    var reproduce = document.querySelector("footer a.reproduce-link");
    check("the footer links the install and reproduce steps", reproduce && /data\.html#reproduce$/.test(reproduce.getAttribute("href")));
    if (document.getElementById("reproduce")) {
      var steps = document.getElementById("reproduce").nextElementSibling;
      check("the reproduce steps say where the store comes from and how to audit", steps && /ptxbench import/.test(steps.textContent) && /ptxbench audit/.test(steps.textContent));
    }
    var audit = document.querySelector(".audit-store");
    if (document.getElementById("audit") && lede) {
      check("the audit section says where the store comes from", audit && /artifacts\//.test(audit.textContent));
    }
    var bundles = document.querySelectorAll(".audit-store a.bundle-link, .run-bundle a.bundle-link");
    Array.prototype.forEach.call(bundles, function (a) {
      check("a bundle link names a zip", /\.zip$/.test(a.getAttribute("href")), a.getAttribute("href"));
    });
    if (window.innerWidth <= 720) {
      var over = document.documentElement.scrollWidth - window.innerWidth;
      var wide = Array.prototype.filter.call(document.querySelectorAll("main *, header *"), function (el) {
        return el.getBoundingClientRect().right > window.innerWidth + 1 && !el.closest(".wide, .scroll, pre, figure");
      }).slice(0, 3).map(function (el) { return el.tagName.toLowerCase() + (el.className ? "." + el.className : ""); });
      check("the page does not scroll sideways at " + window.innerWidth + " px", over <= 1, over + " px too wide " + wide.join(" "));
      Array.prototype.forEach.call(document.querySelectorAll("table.leaderboard"), function (t) {
        var box = t.parentElement;
        box.scrollLeft = box.scrollWidth;
        var name = t.querySelector("tbody td.name");
        if (name) {
          var r = name.getBoundingClientRect();
          check("table " + t.id + ": the entry column stays in view when scrolled", r.left >= -1 && r.right <= window.innerWidth + 1 && r.width > 40, "left " + Math.round(r.left) + ", width " + Math.round(r.width));
          var head = t.querySelector("thead th.name-h");
          var h = head && head.getBoundingClientRect();
          check("table " + t.id + ": its header stays over the entry column when scrolled", h && Math.abs(h.left - r.left) <= 2, h ? "header at " + Math.round(h.left) + ", column at " + Math.round(r.left) : "no header");
        }
        box.scrollLeft = 0;
      });
      Array.prototype.forEach.call(document.querySelectorAll("table.compact"), function (t) {
        var box = t.parentElement;
        box.scrollLeft = box.scrollWidth;
        var cell = t.tBodies[0].rows.length ? t.tBodies[0].rows[0].cells[0] : null, head = t.tHead.rows[0].cells[0];
        if (cell) {
          var c = cell.getBoundingClientRect(), h = head.getBoundingClientRect();
          check("table " + t.id + ": its first column and header stay in view when scrolled", c.left >= -1 && Math.abs(h.left - c.left) <= 2, "column at " + Math.round(c.left) + ", header at " + Math.round(h.left));
        }
        box.scrollLeft = 0;
      });
      var squeezed = Array.prototype.filter.call(document.querySelectorAll("dl.facts dd"), function (dd) {
        return dd.textContent.trim().length > 20 && dd.getBoundingClientRect().width < window.innerWidth * 0.6;
      });
      check("fact values take the screen's width", squeezed.length === 0, squeezed.length + " squeezed");
      var tall = Array.prototype.filter.call(document.querySelectorAll("#turn-table tbody tr"), function (tr) { return tr.getBoundingClientRect().height > 160; });
      check("trajectory rows stay short", tall.length === 0, tall.length + " rows over 160 px");
    }
  }

  function selftest() {
    var checks = [];
    var check = function (name, ok, detail) { checks.push({ name: name, ok: !!ok, detail: detail || "" }); };
    var box = document.querySelector(".filters[data-for]");
    var table = box && document.getElementById(box.getAttribute("data-for"));
    var wanted = document.documentElement.getAttribute("data-selftest-table") !== "optional";
    if (!table) check("no filterable table on this page", !wanted);
    if (table) {
      var turn = box.querySelector("[data-filter=turn]");
      if (turn) { turn.value = "all"; applyFilters(box); }
      var total = table.tBodies[0].rows.length;
      check("all rows shown with every filter off", visible(table).length === total, total + " rows");
      var ths = table.tHead.rows[0].cells, col = -1;
      for (var i = 0; i < ths.length; i++) if (ths[i].getAttribute("data-type") === "num") { col = i; break; }
      check("a numeric column exists", col >= 0);
      if (col >= 0) {
        ths[col].click();
        var keys = visible(table).map(function (r) { return key(r, col, true); }).filter(function (k) { return k !== null; });
        var asc = keys.every(function (k, j) { return j === 0 || keys[j - 1] <= k; });
        check("click sorts ascending", asc && ths[col].getAttribute("aria-sort") === "ascending", keys.slice(0, 5).join(","));
        ths[col].click();
        keys = visible(table).map(function (r) { return key(r, col, true); }).filter(function (k) { return k !== null; });
        var desc = keys.every(function (k, j) { return j === 0 || keys[j - 1] >= k; });
        check("second click sorts descending", desc && ths[col].getAttribute("aria-sort") === "descending", keys.slice(0, 5).join(","));
        check("the sort is in the URL", new URLSearchParams(window.location.search).get(table.id + ".sort") === col + "d", window.location.search);
      }
      var prov = box.querySelector("[data-filter=prov]");
      if (prov) {
        ["measured", "reported"].forEach(function (p) {
          prov.value = p; applyFilters(box);
          var v = visible(table);
          check("source filter " + p, v.every(function (r) { return r.getAttribute("data-prov") === p; }), v.length + " rows");
        });
        prov.value = "all"; applyFilters(box);
      }
      var first = table.tBodies[0].rows[0];
      var text = box.querySelector("[data-filter=text]");
      if (first && text) {
        var needle = (first.getAttribute("data-text") || "").split(" ")[0];
        text.value = needle; applyFilters(box);
        var v = visible(table);
        check("text filter", v.length > 0 && v.every(function (r) { return (r.getAttribute("data-text") || "").indexOf(needle) >= 0; }), needle + ": " + v.length + " rows");
        check("the text filter is in the URL", new URLSearchParams(window.location.search).get(table.id + ".text") === needle, window.location.search);
        text.value = "no-such-entry-zzz"; applyFilters(box);
        check("text filter hides everything for no match", visible(table).length === 0);
        text.value = ""; applyFilters(box);
      }
    }
    if (table && table.tHead && table.offsetHeight > 400 && window.innerWidth > 720 && !table.closest(".scroll")) {
      // Scrolled into the table, its header stays at the top of the window (no box around it
      // that scrolls on its own).
      var top = table.getBoundingClientRect().top + window.pageYOffset;
      // (Only where the page scrolls that far: a short page ends before the header can stick.)
      if (document.documentElement.scrollHeight - window.innerHeight >= top + 200) {
        window.scrollTo(0, top + 200);
        var at = table.tHead.rows[0].cells[0].getBoundingClientRect().top;
        check("the table header sticks", Math.abs(at) < 2, "header at " + at + " px");
        window.scrollTo(0, 0);
      }
    }
    // Every row of every table has as many columns as its header.
    var span = function (row) { return Array.prototype.reduce.call(row.cells, function (n, c) { return n + c.colSpan; }, 0); };
    var ragged = [];
    Array.prototype.forEach.call(document.querySelectorAll("table"), function (t) {
      if (!t.tHead || !t.tHead.rows.length) return;
      var want = span(t.tHead.rows[t.tHead.rows.length - 1]);
      Array.prototype.forEach.call(t.tBodies, function (b) {
        Array.prototype.forEach.call(b.rows, function (r, i) {
          if (span(r) !== want) ragged.push((t.id || "table") + " row " + (i + 1) + ": " + span(r) + " cells, header " + want);
        });
      });
    });
    check("table rows match their headers", ragged.length === 0, ragged.slice(0, 3).join("; "));
    if (window.innerWidth >= 1400) {
      // In a 1400 px window every column of a leaderboard or per-task table is in view.
      Array.prototype.forEach.call(document.querySelectorAll("table.leaderboard, table.compact"), function (t) {
        var shown = t.parentElement.clientWidth, needed = t.offsetWidth;
        check("table " + (t.id || "?") + " fits the window", needed <= shown + 1, needed + " px of " + shown + " px");
      });
    }
    readerChecks(check);
    check("no script errors", errors.length === 0, errors.join(" | "));
    var ok = checks.every(function (c) { return c.ok; });
    var pre = document.createElement("pre");
    pre.id = "selftest-result";
    pre.textContent = "SELFTEST " + (ok ? "PASS" : "FAIL") + "\n" + checks.map(function (c) {
      return (c.ok ? "ok   " : "FAIL ") + c.name + (c.detail ? " (" + c.detail + ")" : "");
    }).join("\n");
    document.body.appendChild(pre);
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), initSort);
  Array.prototype.forEach.call(document.querySelectorAll(".filters[data-for]"), initFilters);
  document.documentElement.setAttribute("data-ready", "1");
  if (window.location.hash === "#selftest" || window.location.hash === "#selftest-optional") {
    if (window.location.hash === "#selftest-optional") {
      document.documentElement.setAttribute("data-selftest-table", "optional");
    }
    selftest();
  }
})();
