// tokenomy pages: draw Plotly figures, keep log2 sliders and number inputs in step, upload a config.json,
// drop empty parameters so links stay short (a pre-filled field emptied travels, to be refused), and point "as JSON" at the API URL of the same question.
(function () {
  "use strict";

  function drawFigures(root) {
    root.querySelectorAll("script[type='application/json'][data-figure]").forEach(function (s) {
      var el = document.getElementById(s.dataset.figure);
      if (!el || !window.Plotly) return;
      var fig = JSON.parse(s.textContent);
      Plotly.react(el, fig.data, fig.layout, {responsive: true, displaylogo: false});
      el.dataset.drawn = String(Number(el.dataset.drawn || 0) + 1);
      if (el.id === "fig-roofline" && !el.dataset.clicks && el.on) {
        el.dataset.clicks = "1";  // a point of the ops trace opens its row of the breakdown (templates/_ops.html)
        el.on("plotly_click", function (ev) {
          var p = ev.points && ev.points[0];
          if (!p || p.data.name !== "ops") return;
          var row = document.querySelector("#op-table tr[data-op='" + String(p.text).replace(/'/g, "\\'") + "']");
          if (row) pickOp(row);
        });
      }
    });
  }

  function pickOp(row) {
    // the Serve page's breakdown: one op's figures in words, its row marked and brought into view
    document.querySelectorAll("#op-table tr.picked").forEach(function (r) { r.classList.remove("picked"); });
    row.classList.add("picked");
    var d = row.dataset, box = document.getElementById("op-detail");
    if (box) {
      box.textContent = d.op + " (" + d.kind + ", " + d.count + " layer" + (d.count === "1" ? "" : "s") + "): " +
        d.flops + "FLOP; reads weights " + d.weights + ", KV " + d.kv + ", activations " + d.act +
        " (intensity " + d.intensity + " FLOP/B); compute " + d.compute + ", memory " + d.memory +
        " -> kernel time " + d.time + " (" + d.bound + "-bound), " + d.perLayer + " per layer, " + d.share +
        " of the pass's kernel time";
      box.hidden = false;
    }
    row.scrollIntoView({block: "nearest"});
  }

  document.addEventListener("click", function (e) {
    var row = e.target.closest && e.target.closest("#op-table tr.op-row");
    if (row) pickOp(row);
  });
  document.addEventListener("keydown", function (e) {
    var row = e.key === "Enter" && e.target.closest && e.target.closest("#op-table tr.op-row");
    if (row) pickOp(row);
  });

  function syncSliders(form) {
    form.querySelectorAll("input[type=range][data-log2-for]").forEach(function (r) {
      var n = form.querySelector("input[name='" + r.dataset.log2For + "']");
      var v = Number(n && n.value);
      if (v > 0) r.value = String(Math.round(Math.log2(v)));
    });
  }

  function markInvalid(form) {
    form.querySelectorAll(".invalid").forEach(function (el) { el.classList.remove("invalid"); });
    var err = document.querySelector("#results .error[data-field]");
    if (!err) return;
    var el = form.querySelector("[name='" + err.dataset.field + "']");
    if (el) el.classList.add("invalid");
  }

  function apiLink(form) {
    // the API URL of the question on screen: the form's non-empty fields (the Serve page's pass kind is the path)
    var a = document.getElementById("api-link");
    if (!a) return;
    var p = new URLSearchParams();
    new FormData(form).forEach(function (v, k) { if (v !== "") p.append(k, v); });
    var base = a.dataset.api;
    p.delete("preset");  // the Workload page's use case only fills the fields it sets (ISL, OSL, SLOs)
    var loop = p.get("loop");  // the Workload page: the load list of the loop chosen, not both
    if (loop) { p.delete("loop"); p.delete(loop === "rate" ? "concurrency" : "rate"); }
    if (!base) {
      var kind = p.get("kind") || "decode";
      base = "/api/" + kind;
      ["kind"].concat(kind === "decode" ? ["len_pass"] : []).forEach(function (k) { p.delete(k); });
      // the Serve page's request (web/serve_request.py) is not the pass's: with pools, the pass is on its kind's
      var disagg = p.get("mode") === "disagg";
      Array.from(p.keys()).forEach(function (k) {
        var m = k.match(/^(prefill|decode)_(.+)$/);
        if (m && disagg && m[1] === kind) p.set(m[2], p.get(k));
        if (m || ["isl", "osl", "mode"].indexOf(k) >= 0) p.delete(k);
      });
    }
    a.href = base + "?" + p.toString();
  }

  function prefillOnly(form) {
    var kind = form.querySelector("[name=kind]");
    form.querySelectorAll(".prefill-only").forEach(function (el) {
      el.hidden = !kind || kind.value !== "prefill";
    });
    var mode = form.querySelector("[name=mode]");  // the Workload page: the aggregated layout or the pools
    if (mode) ["agg", "disagg"].forEach(function (k) {
      form.querySelectorAll(".mode-" + k).forEach(function (el) { el.hidden = mode.value !== k; });
    });
    var loop = form.querySelector("[name=loop]");  // the Workload page shows the list of the loop chosen
    if (loop) ["concurrency", "rate"].forEach(function (k) {
      form.querySelectorAll(".loop-" + k).forEach(function (el) { el.hidden = loop.value !== k; });
    });
  }

  var PRESET_FIELDS = ["isl", "osl", "ttft_slo", "tpot_slo"];

  function usePreset(form, target) {
    // the Workload page's use case: choosing one fills its lengths and SLOs (before htmx gathers the form);
    // editing one of them by hand makes the question a custom one again
    var preset = form.querySelector("select[name=preset]");
    if (!preset) return;
    if (target === preset) {
      var opt = preset.selectedOptions[0];
      if (!opt || !opt.value) return;
      PRESET_FIELDS.forEach(function (k) {
        var el = form.querySelector("[name='" + k + "']");
        if (el) el.value = opt.dataset[k] || "";
      });
    } else if (PRESET_FIELDS.indexOf(target.name) >= 0) {
      preset.value = "";
    }
  }

  function upload(form, file) {
    var box = document.getElementById("upload-error");
    file.text().then(function (text) {
      return fetch("/api/upload", {method: "POST", headers: {"Content-Type": "application/json"}, body: text});
    }).then(function (resp) {
      return resp.json().then(function (body) { return {ok: resp.ok, body: body}; });
    }).then(function (res) {
      if (!res.ok) {
        var d = (res.body.detail || [{}])[0];
        box.textContent = (d.loc ? d.loc[d.loc.length - 1] + ": " : "") + (d.msg || "upload failed");
        box.hidden = false;
        return;
      }
      var p = new URLSearchParams(window.location.search);
      p.delete("model");
      p.set("config", res.body.config);
      window.location.search = p.toString();
    });
  }

  function currentForm() { return document.querySelector("form[hx-get]"); }

  function customChip(form) {
    // the custom-chip panel: one input per what-if field, kept in step with the set=field=value,... input that
    // travels in the URL (typing in either updates the other; the form's own input event then asks for the page)
    var set = form.querySelector("input[name='set']");
    if (!set) return;
    var fields = form.querySelectorAll("input[data-set-field]");
    function parse() {
      var out = {};
      set.value.split(",").forEach(function (p) {
        var kv = p.split("=");
        if (kv.length === 2 && kv[0].trim()) out[kv[0].trim()] = kv[1].trim();
      });
      return out;
    }
    function fill() {
      var v = parse();
      fields.forEach(function (f) { f.value = v[f.dataset.setField] || ""; });
    }
    fill();
    fields.forEach(function (f) {
      f.addEventListener("input", function () {
        var v = parse();
        if (f.value.trim()) v[f.dataset.setField] = f.value.trim(); else delete v[f.dataset.setField];
        set.value = Object.keys(v).map(function (k) { return k + "=" + v[k]; }).join(",");
      });
    });
    set.addEventListener("input", fill);
  }

  function initForm(form) {
    // per form: a history restore (Back after a cache miss) swaps in a new body, so a new form to set up
    if (!form || form.dataset.ready) return;
    form.dataset.ready = "1";
    syncSliders(form);
    prefillOnly(form);
    apiLink(form);
    markInvalid(form);
    customChip(form);
    form.querySelectorAll("input[type=range][data-log2-for]").forEach(function (r) {
      r.addEventListener("input", function () {
        var n = form.querySelector("input[name='" + r.dataset.log2For + "']");
        n.value = String(Math.pow(2, Number(r.value)));
      });
    });
    form.addEventListener("input", function (e) {
      if (["kind", "loop", "mode"].indexOf(e.target.name) >= 0) prefillOnly(form);
      usePreset(form, e.target);
      if (e.target.inputMode === "decimal") syncSliders(form);
    });
    var file = document.getElementById("config-file");
    if (file) file.addEventListener("change", function () { if (file.files[0]) upload(form, file.files[0]); });
    var clear = document.getElementById("config-clear");
    if (clear) clear.addEventListener("click", function () {
      var p = new URLSearchParams(window.location.search);
      p.delete("config");
      window.location.search = p.toString();
    });
  }

  function cellValue(td) {
    // a cell's sort key: the number it shows with its SI prefix ("1.2 T", "$3.4 M", "85.5 GB"), else its text
    var t = (td.innerText || "").trim().replace(/[$,]/g, "");
    var m = t.match(/^(-?[0-9.]+(?:e[-+]?[0-9]+)?)\s*([kMGTPB]?)/);
    if (!m) return t.toLowerCase();
    var scale = {"": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, B: 1e9}[m[2]];
    return Number(m[1]) * scale;
  }

  function sortBy(th) {
    var table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
    var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a.cells[col]), y = cellValue(b.cells[col]);
      var c = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
      return dir === "ascending" ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  function catalogTools() {
    // the Catalog page: sortable columns and one search box over every table's rows (its source cells aside)
    document.querySelectorAll("table.sortable th").forEach(function (th) {
      if (th.dataset.sortable) return;
      th.dataset.sortable = "1";
      th.addEventListener("click", function () { sortBy(th); });
    });
    var box = document.getElementById("catalog-search");
    if (!box || box.dataset.ready) return;
    box.dataset.ready = "1";
    box.addEventListener("input", function () {
      var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
      document.querySelectorAll("table.sortable tbody tr").forEach(function (tr) {
        var text = Array.prototype.filter.call(tr.cells, function (c) { return !c.classList.contains("src"); })
          .map(function (c) { return c.innerText.toLowerCase(); }).join(" ");
        tr.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
      });
    });
  }

  function setup() {
    drawFigures(document);
    catalogTools();
    initForm(currentForm());
    document.body.addEventListener("htmx:configRequest", function (e) {
      var p = e.detail.parameters, form = currentForm();
      Object.keys(Object.fromEntries(p.entries ? p.entries() : Object.entries(p))).forEach(function (k) {
        var v = p.get ? p.get(k) : p[k];
        // a field the form shows filled travels even when emptied: the page refuses it by name (never its default)
        var kept = form && form.querySelector("[name='" + k + "'][data-prefilled]");
        if ((v === "" || v === null) && !kept) { if (p.delete) p.delete(k); else delete p[k]; }
      });
    });
    // draw after the settle: htmx's settle step restores the swapped elements' class attributes, which would
    // strip the classes Plotly adds (js-plotly-plot) and with them its layer positioning
    document.body.addEventListener("htmx:afterSettle", function (e) {
      drawFigures(e.detail.target || document);
    });
    document.body.addEventListener("htmx:afterSwap", function (e) {
      var form = currentForm();
      if (!form) return;
      initForm(form);
      markInvalid(form);
      apiLink(form);
    });
    // a history entry the server could not restore: load it whole rather than keep another entry's results
    document.body.addEventListener("htmx:historyCacheMissLoadError", function () { window.location.reload(); });
    document.body.addEventListener("htmx:historyRestore", function () {
      drawFigures(document);
      initForm(currentForm());
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();

// The launch blocks' copy buttons (templates/_launch.html): the <pre> a button names goes to the clipboard.
document.addEventListener("click", function (e) {
  var b = e.target.closest && e.target.closest("button.copy[data-copy]");
  if (!b) return;
  var pre = document.getElementById(b.dataset.copy);
  if (!pre || !navigator.clipboard) return;
  navigator.clipboard.writeText(pre.textContent).then(function () { b.textContent = "copied"; });
});
