// Charts of mosaic watch, drawn with uPlot (static/vendor/, fetched at build time): a chart per
// series with smoothing as TensorBoard does it, x as step / wall time / relative time, several
// runs and agents on one chart, drag-zoom (double-click resets) and a download of what it shows.
// A long series comes downsampled to the page's width (each pixel column's lowest and highest
// point, read by the server); a zoom reads its range again, whole when it is short enough, and
// a download always reads every point.
"use strict";

const charts = {
  X_MODES: { step: "step", relative: "relative time (s)", wall: "wall time" },

  // An fnmatch glob as a RegExp over the whole name: * anything (slashes too), ? one
  // character, [abc] / [!abc] a set; everything else stands for itself.
  globRegExp(pattern) {
    let out = "";
    for (let i = 0; i < pattern.length; i++) {
      const c = pattern[i];
      if (c === "*") out += ".*";
      else if (c === "?") out += ".";
      else if (c === "[") {
        const end = pattern.indexOf("]", i + 2);
        if (end < 0) { out += "\\["; continue; }
        let set = pattern.slice(i + 1, end);
        const negate = set[0] === "!";
        if (negate) set = set.slice(1);
        out += "[" + (negate ? "^" : "") + set.replace(/[\\\]^]/g, "\\$&") + "]";
        i = end;
      } else out += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    }
    return new RegExp("^" + out + "$", "s");
  },

  // TensorBoard's smoothing: an exponential moving average whose start is debiased (divided by
  // 1 - weight^n after n finite values, so the first points are not pulled towards 0). A
  // non-finite value is kept as it is and leaves the average alone; so is a constant series.
  smooth(values, weight) {
    return charts.smoothFrom(null, values, weight).out.subarray(0, values.length);
  },

  // The smoothing of `values` continued from `state` (what an earlier call on the first
  // state.n of these values left: a live line is smoothed only where it grew); a new state.
  smoothFrom(state, values, weight) {
    const n = values.length;
    let s = state;
    if (!s || s.weight !== weight || s.n > n || (s.constant && n > s.n && !charts.same(values, s.n, values[0]))) {
      s = { weight, n: 0, average: 0, power: 1, constant: true, out: new Float64Array(Math.max(16, n)) };
    }
    if (s.out.length < n) {
      const out = new Float64Array(Math.max(n, 2 * s.out.length));
      out.set(s.out.subarray(0, s.n));
      s.out = out;
    }
    const out = s.out;
    if (s.n === 0) s.constant = charts.same(values, 1, values[0]);
    if (!(weight > 0) || s.constant) {
      for (let i = s.n; i < n; i++) out[i] = values[i];
    } else {
      let average = s.average, power = s.power;
      for (let i = s.n; i < n; i++) {
        const v = values[i];
        if (!Number.isFinite(v)) { out[i] = v; continue; }
        average = average * weight + (1 - weight) * v;
        power *= weight;
        out[i] = average / (1 - power);
      }
      s.average = average; s.power = power;
    }
    s.n = n;
    return s;
  },

  // Whether values[from:] all equal v.
  same(values, from, v) {
    for (let i = from; i < values.length; i++) if (values[i] !== v) return false;
    return true;
  },

  // A growable float64 column: `add` appends a chunk, `view` is the values so far.
  growable() {
    let buffer = new Float64Array(1024), n = 0;
    return {
      add(chunk) {
        if (n + chunk.length > buffer.length) {
          const bigger = new Float64Array(Math.max(n + chunk.length, 2 * buffer.length));
          bigger.set(buffer.subarray(0, n));
          buffer = bigger;
        }
        buffer.set(chunk, n);
        n += chunk.length;
      },
      view() { return buffer.subarray(0, n); },
    };
  },

  // A column uPlot draws: a Float64Array when every value is finite (the usual case, and the
  // fastest), else an array with null (a gap) where a value is not finite.
  column(values) {
    const n = values.length;
    let finite = true;
    for (let i = 0; i < n && finite; i++) finite = Number.isFinite(values[i]);
    if (finite) return values instanceof Float64Array ? values : Float64Array.from(values);
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = Number.isFinite(values[i]) ? values[i] : null;
    return out;
  },

  // JSON's and CSV's spelling of a number (NaN and infinities by name, as the API sends them).
  jsonNumber(v) { return Number.isFinite(v) ? v : String(v); },

  // x values of a line in a mode; lines without wall times (episode returns) keep their x.
  xOf(line, mode) {
    if (mode === "step" || !line.wall) return line.steps;
    if (mode === "wall") return line.wall;
    const t0 = line.origin === undefined ? (line.wall.length ? line.wall[0] : 0) : line.origin;
    return line.wall.map((t) => t - t0);
  },

  // Whether the lines' x arrays are one (series written at the same steps: the usual case).
  sameX(xs) {
    const first = xs[0];
    if (!first || !charts.sorted(first)) return false;
    for (const x of xs) {
      if (x === first) continue;
      if (x.length !== first.length) return false;
      for (let i = 0; i < x.length; i++) if (x[i] !== first[i]) return false;
    }
    return true;
  },

  sorted(x) {
    for (let i = 1; i < x.length; i++) if (!(x[i] >= x[i - 1])) return false;
    return true;
  },

  // Past this many points in all, lines at different x are thinned before they are joined;
  // lines at the same x, past this many points a pixel (uPlot would thin them as it draws).
  JOIN_LIMIT: 200000,
  SHARED_LIMIT: 8,

  // Columns of long lines at different x, thinned onto one x grid: each segment [lo, hi) of
  // `segments` ([lo, hi, buckets]) is cut in buckets of a pixel or so, and each line keeps,
  // in each bucket, its first, lowest, highest and last values (in the order written), at
  // four x places inside the bucket: what a pixel column shows of it. A value that is not
  // finite leaves a gap (null) in its bucket.
  grid(xs, columns, segments) {
    let size = 0;
    for (const [, , buckets] of segments) size += 4 * buckets;
    const total = size / 4;
    const gx = new Float64Array(size);
    let at = 0;
    for (const [lo, hi, buckets] of segments) {
      const width = (hi - lo) / buckets;
      for (let b = 0; b < buckets; b++) for (let k = 0; k < 4; k++) gx[at++] = lo + (b + (k + 0.5) / 4) * width;
    }
    // the bucket of each point, once per x array (lines at the same steps share it); -1: outside
    const known = new Map();
    const bucketsOf = (x) => {
      if (known.has(x)) return known.get(x);
      const out = new Int32Array(x.length).fill(-1);
      let base = 0;
      segments.forEach(([lo, hi, buckets], s) => {
        const last = s === segments.length - 1;
        const width = (hi - lo) / buckets || 1;
        for (let i = 0; i < x.length; i++) {
          const xi = x[i];
          if (!(xi >= lo) || xi > hi || (xi === hi && !last)) continue;
          out[i] = base + Math.min(buckets - 1, Math.floor((xi - lo) / width));
        }
        base += buckets;
      });
      known.set(x, out);
      return out;
    };
    const out = [gx];
    const first = new Int32Array(total), low = new Int32Array(total);
    const high = new Int32Array(total), end = new Int32Array(total);
    const gap = new Uint8Array(total);
    for (const [j, y] of columns) {
      const bucket = bucketsOf(xs[j]);
      first.fill(-1); gap.fill(0);
      for (let i = 0; i < bucket.length; i++) {
        const b = bucket[i];
        if (b < 0) continue;
        const v = y[i];
        if (!Number.isFinite(v)) { gap[b] = 1; continue; }
        if (first[b] < 0) { first[b] = low[b] = high[b] = i; }
        else { if (v < y[low[b]]) low[b] = i; else if (v > y[high[b]]) high[b] = i; }
        end[b] = i;
      }
      const col = new Array(size);
      for (let b = 0; b < total; b++) {
        if (first[b] < 0) { if (gap[b]) col[4 * b] = null; continue; }
        const four = [first[b], low[b], high[b], end[b]].sort((p, q) => p - q);
        let t = 0;
        for (let k = 0; k < 4; k++) if (k === 0 || four[k] !== four[k - 1]) col[4 * b + t++] = y[four[k]];
        if (gap[b]) col[4 * b + 3] = null;
      }
      out.push(col);
    }
    return out;
  },

  // Columns for lines at different x: one sorted x of every line's x, and each line's values
  // at its own x (undefined elsewhere: uPlot draws across it; null where a value is not
  // finite: a gap). picks[j]: the indices of line j to use (all of them when null).
  join(xs, columns, picks) {
    let total = 0;
    for (let j = 0; j < xs.length; j++) total += picks[j] ? picks[j].length : xs[j].length;
    const all = new Float64Array(total);
    let k = 0;
    xs.forEach((x, j) => {
      const pick = picks[j];
      if (pick) for (const i of pick) all[k++] = x[i]; else { all.set(x, k); k += x.length; }
    });
    all.sort();
    let m = 0;
    for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[m - 1]) all[m++] = all[i];
    const joined = all.slice(0, m);
    const where = (v) => {  // the index of v in joined (binary search)
      let lo = 0, hi = m - 1;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (joined[mid] < v) lo = mid + 1; else hi = mid; }
      return lo;
    };
    const out = [joined];
    columns.forEach(([j, y]) => {
      const col = new Array(m);
      const x = xs[j];
      const pick = picks[j];
      const n = pick ? pick.length : x.length;
      for (let t = 0; t < n; t++) {
        const i = pick ? pick[t] : t;
        col[where(x[i])] = Number.isFinite(y[i]) ? y[i] : null;
      }
      out.push(col);
    });
    return out;
  },

  // A column of the points API in base64: little-endian float64 values.
  float64s(text) {
    const bytes = atob(text);
    const buffer = new Uint8Array(bytes.length);
    for (let i = 0; i < bytes.length; i++) buffer[i] = bytes.charCodeAt(i);
    return new Float64Array(buffer.buffer);
  },

  // Several series of several runs in one request (/api/series/batch): `query` a list of
  // {run_id, name, agent_id, after_step, through_step}; `buckets` the pixel columns (null: every
  // point), `limit` the most points a series (null: the server's). Resolves to {ok, error, series}:
  // per series asked, in order, its row {run_id, name, agent_id, n, more, downsampled, points,
  // through} and its columns steps, values, wall as Float64Array views of the answer (no copy,
  // no numbers parsed). Never throws.
  async batch(query, buckets, limit) {
    let url = "/api/series/batch?series=" + encodeURIComponent(JSON.stringify(query));
    if (buckets) url += "&buckets=" + buckets;
    if (limit) url += "&limit=" + limit;
    const reply = await watch.api(url, null, true);
    if (!reply.ok) return { ok: false, error: reply.data.error, series: [] };
    const buffer = reply.data;
    // a little-endian uint32 n, n bytes of JSON, zeros up to a multiple of 8, then per series
    // its n steps, n values and n wall times as little-endian float64
    const size = new DataView(buffer).getUint32(0, true);
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, size)));
    let at = 4 + size + ((8 - ((4 + size) % 8)) % 8);
    const series = header.series.map((row) => {
      const n = row.n;
      const got = Object.assign({}, row, {
        steps: new Float64Array(buffer, at, n),
        values: new Float64Array(buffer, at + 8 * n, n),
        wall: new Float64Array(buffer, at + 16 * n, n),
      });
      at += 24 * n;
      return got;
    });
    return { ok: true, error: null, series };
  },

  // The pixel columns a series is read at: the page's width (a chart is never wider).
  buckets() { return Math.max(400, Math.min(4096, Math.round(window.innerWidth || 1280))); },

  // The step range [first, last] of a line that covers the x range `zoom` in `mode` (a point
  // either side: the line runs on to the edges).
  stepRange(line, mode, zoom) {
    const x = charts.xOf(line, mode), steps = line.steps, n = steps.length;
    if (mode === "step") return [Math.floor(zoom[0]), Math.ceil(zoom[1])];
    let i = 0;
    while (i < n && x[i] < zoom[0]) i++;
    let j = n - 1;
    while (j >= 0 && x[j] > zoom[1]) j--;
    return [steps[Math.max(0, i - 1)], steps[Math.min(n - 1, Math.max(j + 1, 0))]];
  },

  // A line's points with those of [first, last] taken from `fine` (a zoom's read).
  merged(line, fine, first, last) {
    const steps = line.steps, n = steps.length;
    let a = 0;
    while (a < n && steps[a] < first) a++;
    let b = a;
    while (b < n && steps[b] <= last) b++;
    const size = a + fine.steps.length + (n - b);
    const out = { steps: new Float64Array(size), values: new Float64Array(size), wall: new Float64Array(size) };
    for (const key of ["steps", "values", "wall"]) {
      const whole = line[key] || line.steps;
      out[key].set(whole.subarray(0, a), 0);
      out[key].set(fine[key], a);
      out[key].set(whole.subarray(b), a + fine.steps.length);
    }
    return Object.assign({}, line, out, { smoothing: null });
  },

  // Save text as a file (the browser's download).
  save(filename, text, type) {
    const url = URL.createObjectURL(new Blob([text], { type }));
    const a = watch.el("a", null, { href: url, download: filename });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  },

  csvField(v) {
    const s = v === null || v === undefined ? "" : String(v);
    return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  },
};

// One chart: a uPlot with a title, its own legend, and CSV / JSON downloads of what it shows.
// A line: {label, color, steps, values, wall?, origin?, run_id?, name?, agent_id?, version}.
class ChartPanel {
  constructor(parent, title, options) {
    this.title = title;
    this.options = Object.assign({ xLabel: null, yLabel: "", height: 220, smoothable: true }, options || {});
    this.box = watch.el("div", null, { class: "chart-panel", "data-chart": title });
    const head = watch.el("div", null, { class: "chart-head" });
    head.appendChild(watch.el("span", title, { class: "chart-title" }));
    for (const format of ["csv", "json"]) {
      const button = watch.el("button", format.toUpperCase(), { class: "download", "data-format": format, title: "download what this chart shows" });
      button.addEventListener("click", () => this.download(format));
      head.appendChild(button);
    }
    this.box.appendChild(head);
    this.plotBox = watch.el("div", null, { class: "chart-plot" });
    this.box.appendChild(this.plotBox);
    this.legend = watch.el("div", null, { class: "chart-legend" });
    this.box.appendChild(this.legend);
    parent.appendChild(this.box);
    this.plot = null;
    this.shape = "";
    this.lines = [];
    this.drawn = null;
    this.drawMs = 0;
  }

  zoomed() {
    const u = this.plot;
    if (!u || !u.data[0].length) return null;
    const x = u.data[0], s = u.scales.x;
    if (s.min > x[0] || s.max < x[x.length - 1]) return [s.min, s.max];
    return null;
  }

  // Draw `lines` with the page's settings {weight, mode}; redrawn only when they changed.
  update(lines, settings) {
    if (typeof uPlot === "undefined") {
      this.plotBox.textContent = "the chart library (uPlot) is missing from this install: reinstall " +
        "the SDK (its build fetches uPlot), or run scripts/vendor-uplot in a source checkout";
      return false;
    }
    const weight = this.options.smoothable ? settings.weight : 0;
    const mode = this.options.xLabel ? "step" : settings.mode;
    const detail = this.detail && this.detail.mode === mode ? this.detail : null;
    const stamp = lines.map((l) => l.label + ":" + l.version).join("|") + "|" + weight + "|" + mode +
      "|" + (detail ? detail.key : "");
    if (stamp === this.stamp && this.plot) return false;
    this.stamp = stamp;
    const started = performance.now();
    this.source = lines;
    this.settings = settings;
    if (detail) {  // a zoom's range, read again finely, inside the coarse lines
      lines = lines.map((l) => {
        const fine = detail.lines.get(l);
        return fine ? charts.merged(l, fine, fine.first, fine.last) : l;
      });
    }
    this.lines = lines;
    this.weight = weight;
    this.mode = mode;
    const series = [{ label: this.options.xLabel || charts.X_MODES[mode] }];
    this.smoothed = lines.map((l) => {  // kept on the line: a live line is smoothed where it grew
      if (!(weight > 0)) return l.values;
      l.smoothing = charts.smoothFrom(l.smoothing, l.values, weight);
      return l.smoothing.out.subarray(0, l.values.length);
    });
    this.xs = lines.map((l) => charts.xOf(l, mode));
    this.columns = [];  // [line index, values] per drawn line
    lines.forEach((line, i) => {
      if (weight > 0) {  // the raw values faint behind the smoothed line, as TensorBoard does
        this.columns.push([i, line.values]);
        series.push({ label: line.label + " (raw)", stroke: line.color, alpha: 0.25, width: 1, points: { show: false } });
      }
      this.columns.push([i, this.smoothed[i]]);
      series.push({ label: line.label, stroke: line.color, width: line.width || 1.5, dash: line.dash, points: { show: line.values.length === 1 } });
    });
    this.shared = charts.sameX(this.xs);
    const shape = series.map((s) => s.label).join("|") + "|" + mode;
    const zoom = this.shape === shape ? this.zoomed() : null;
    const data = this.data(zoom);
    if (this.plot && this.shape === shape) {
      this.plot.setData(data, zoom === null);
    } else {
      if (this.plot) this.plot.destroy();
      this.plot = new uPlot(this.plotOptions(series, mode), data, this.plotBox);
      this.shape = shape;
    }
    this.drawn = data;
    this.drawLegend(lines);
    this.drawMs = performance.now() - started;
    return true;
  }

  // uPlot's columns for the x range `zoom` ([lo, hi], or null: everything). Lines at one x
  // are given whole (uPlot thins what it draws by itself); lines at different x are joined,
  // and thinned first when they are long: finely inside the zoom, coarsely outside it.
  data(zoom) {
    const xs = this.xs;
    this.thinned = false;
    this.dataZoom = zoom ? zoom.join() : "";
    const buckets = Math.max(200, Math.round(this.plotBox.clientWidth || 900));
    let shared = null;
    if (this.shared) {
      shared = xs[0] instanceof Float64Array ? xs[0] : Float64Array.from(xs[0]);
      // short lines go whole to uPlot; long ones are thinned as for lines at different x
      if (shared.length <= charts.SHARED_LIMIT * buckets) {
        return [shared, ...this.columns.map(([, y]) => charts.column(y))];
      }
    } else {
      const total = xs.reduce((n, x) => n + x.length, 0);
      // lines the server downsampled (each its own steps) go onto the pixel grid at once:
      // joined, 20 of them would be 20 columns as long as all their steps together
      const coarse = this.lines.some((l) => l.downsampled);
      if (total <= charts.JOIN_LIMIT && !coarse) return charts.join(xs, this.columns, xs.map(() => null));
    }
    this.thinned = true;
    const onto = shared ? xs.map(() => shared) : xs;
    let lo = Infinity, hi = -Infinity;
    for (const x of shared ? [shared] : xs) for (let i = 0; i < x.length; i++) { if (x[i] < lo) lo = x[i]; if (x[i] > hi) hi = x[i]; }
    if (!zoom || !(zoom[1] > zoom[0])) return charts.grid(onto, this.columns, [[lo, hi > lo ? hi : lo + 1, buckets]]);
    const share = (a, b) => Math.max(1, Math.round(buckets * (b - a) / (hi - lo)));
    const segments = [];
    if (zoom[0] > lo) segments.push([lo, zoom[0], share(lo, zoom[0])]);
    segments.push([Math.max(lo, zoom[0]), Math.min(hi, zoom[1]), buckets]);
    if (zoom[1] < hi) segments.push([zoom[1], hi, share(zoom[1], hi)]);
    return charts.grid(onto, this.columns, segments);
  }

  // A zoom of thinned lines reads them again, finely, inside the new range.
  rethin(u) {
    if (!this.thinned || this.rethinning) return;
    this.rethinning = true;
    setTimeout(() => {
      const zoom = this.zoomed();
      this.rethinning = false;
      if ((zoom ? zoom.join() : "") === this.dataZoom) return;
      const data = this.data(zoom);
      this.drawn = data;
      u.setData(data, zoom === null);  // back to the whole: the scale follows the coarse data
    }, 0);
  }

  // A zoom into downsampled lines reads their points inside it again from the server (whole
  // when few enough, else downsampled to the chart's width); zoomed out: the coarse lines.
  refine() {
    const zoom = this.zoomed();
    const key = zoom ? zoom.join() : "";
    if (key === this.refineKey) return;
    this.refineKey = key;
    clearTimeout(this.refineTimer);
    if (!zoom) {
      if (this.detail) { this.detail = null; this.update(this.source, this.settings); }
      return;
    }
    const coarse = (this.source || []).filter((l) => l.downsampled && l.feed);
    if (!coarse.length) return;
    const mode = this.mode;
    this.refineTimer = setTimeout(async () => {
      const lines = new Map();
      const width = Math.max(200, Math.round(this.plotBox.clientWidth || 900));
      for (const line of coarse) {
        const [first, last] = charts.stepRange(line, mode, zoom);
        const fine = await line.feed.range(line, first - 1, last, width);
        if (!fine || this.refineKey !== key) return;  // failed, or zoomed elsewhere meanwhile
        fine.first = first; fine.last = last;
        lines.set(line, fine);
      }
      this.detail = { key, mode, lines };
      this.refines = (this.refines || 0) + 1;
      this.update(this.source, this.settings);
    }, 30);
  }

  plotOptions(series, mode) {
    const width = Math.max(240, this.plotBox.clientWidth || this.box.clientWidth || 480);
    return {
      width, height: this.options.height,
      scales: { x: { time: mode === "wall" } },
      series,
      axes: [{ label: series[0].label, size: 40 }, { label: this.options.yLabel, size: 56 }],
      legend: { show: false },
      cursor: { drag: { x: true, y: false } },  // drag to zoom; double-click resets
      hooks: {
        draw: [() => { this.drawnAt = performance.now(); this.draws = (this.draws || 0) + 1; }],
        setScale: [(u, key) => { if (key === "x") { this.rethin(u); this.refine(); } }],
      },
    };
  }

  drawLegend(lines) {
    this.legend.replaceChildren(...lines.map((line) => {
      const item = watch.el("span", null, { class: "legend-item" });
      const swatch = watch.el("span", null, { class: "swatch" });
      swatch.style.background = line.color;
      item.appendChild(swatch);
      const last = line.values.length ? this.smoothed[lines.indexOf(line)][line.values.length - 1] : null;
      item.appendChild(document.createTextNode(line.label + (last === null ? "" : " " + watch.num(last, 4))));
      return item;
    }));
  }

  resize() {
    if (!this.plot) return;
    const width = Math.max(240, this.plotBox.clientWidth || 480);
    if (width !== this.plot.width) this.plot.setSize({ width, height: this.options.height });
  }

  // Every point of the chart's lines: a series' line is read whole from the server (the chart
  // may draw it downsampled); other lines (episode returns) are what the page holds.
  async complete() {
    const out = [];
    for (const line of this.source || this.lines) {
      if (!line.feed) { out.push(line); continue; }
      const all = await line.feed.range(line, null, null, null);
      if (!all) throw new Error(line.feed.error || "the points could not be read");
      out.push(Object.assign({}, line, all));
    }
    return out;
  }

  // The lines' points on the chart now (inside the zoom, when zoomed), raw and smoothed:
  // every point, never the downsampled ones drawn.
  async shown() {
    const zoom = this.zoomed();
    const lines = await this.complete();
    return lines.map((line) => {
      const x = charts.xOf(line, this.mode);
      const smoothed = this.weight > 0 ? charts.smooth(line.values, this.weight) : line.values;
      const keep = [];
      for (let k = 0; k < x.length; k++) if (!zoom || (x[k] >= zoom[0] && x[k] <= zoom[1])) keep.push(k);
      return {
        run_id: line.run_id || null, name: line.name || this.title, agent_id: line.agent_id === undefined ? null : line.agent_id,
        label: line.label,
        steps: keep.map((k) => line.steps[k]),
        wall_time: line.wall ? keep.map((k) => line.wall[k]) : null,
        values: keep.map((k) => charts.jsonNumber(line.values[k])),
        smoothed: keep.map((k) => charts.jsonNumber(smoothed[k])),
      };
    });
  }

  async download(format) {
    let shown;
    try {
      shown = await this.shown();
    } catch (e) {
      this.legend.textContent = "download failed: " + e.message;
      return;
    }
    const base = (this.title.replace(/[^A-Za-z0-9._-]+/g, "_") || "chart");
    if (format === "json") {
      const body = { chart: this.title, x_axis: this.mode, smoothing: this.weight, zoom: this.zoomed(), lines: shown };
      charts.save(base + ".json", JSON.stringify(body, null, 1), "application/json");
      return;
    }
    const rows = [["run_id", "name", "agent_id", "step", "wall_time", "value", "smoothed"].join(",")];
    for (const l of shown) {
      for (let k = 0; k < l.steps.length; k++) {
        rows.push([l.run_id, l.name, l.agent_id, l.steps[k], l.wall_time ? l.wall_time[k] : "", l.values[k], l.smoothed[k]]
          .map(charts.csvField).join(","));
      }
    }
    charts.save(base + ".csv", rows.join("\n") + "\n", "text/csv");
  }

  remove() {
    if (this.plot) this.plot.destroy();
    this.box.remove();
  }
}

// The series of one run, fetched as they grow: the list every poll, then the new points (past
// each series' last step) of the series the page shows, several series a request.
class SeriesFeed {
  constructor(runId) {
    this.runId = runId;
    this.infos = [];
    this.lines = new Map();  // name + "\u0000" + agent -> line
    this.counts = null;
    this.error = null;
  }

  static key(name, agent) { return name + "\u0000" + (agent === null ? "" : "a:" + agent); }

  // The run's list of series (every poll); resolves to the lines `wanted` picks that have
  // points past those the page has.
  async list(wanted) {
    const { ok, data } = await watch.api(watch.apiUrl(this.runId, "series"));
    if (!ok) { this.error = data.error; return []; }
    this.error = null;
    this.runId = data.run_id;
    this.infos = data.series;
    this.counts = data.counts;
    this.startedAt = data.started_at;
    const due = [];
    for (const info of data.series) {
      if (!wanted(info)) continue;
      const key = SeriesFeed.key(info.name, info.agent_id);
      let line = this.lines.get(key);
      if (!line) {
        line = {
          run_id: data.run_id, name: info.name, agent_id: info.agent_id, version: 0, lastStep: null,
          feed: this, downsampled: false,
          columns: { steps: charts.growable(), values: charts.growable(), wall: charts.growable() },
          steps: new Float64Array(0), values: new Float64Array(0), wall: new Float64Array(0),
        };
        this.lines.set(key, line);
      }
      line.info = info;
      line.origin = this.startedAt;
      if (line.lastStep === null || info.last_step > line.lastStep) due.push(line);
    }
    return due;
  }

  // onBatch: called after each batch of points has come (the page draws what it has).
  async poll(wanted, onBatch) { await SeriesFeed.follow(await this.list(wanted), onBatch); }

  // The new points of the `due` lines (of one run or of several: a chart's overlays), several
  // series of several runs a request (/api/series/batch), downsampled to the page's width.
  static async follow(due, onBatch) {
    due = due.slice();
    for (let rounds = 0; due.length && rounds < 200; rounds++) {
      // a few series a request, about 400k points at most: the first look at a long run
      // draws chart by chart instead of after one very long answer
      let take = 0, points = 0;
      for (const line of due.slice(0, 40)) {
        const info = line.info;
        points += info ? Math.min(2 * charts.buckets(), info.points - line.values.length) : 0;
        if (take > 0 && points > 400000) break;
        take += 1;
      }
      const batch = due.splice(0, Math.max(1, take));
      const query = batch.map((l) => ({ run_id: l.run_id, name: l.name, agent_id: l.agent_id, after_step: l.lastStep }));
      const reply = await charts.batch(query, charts.buckets());
      if (!reply.ok) { for (const l of batch) l.feed.error = reply.error; return; }
      reply.series.forEach((got, i) => {
        const line = batch[i];
        const steps = got.steps;
        if (got.downsampled) line.downsampled = true;
        if (steps.length === 0) { if (got.through !== null) line.lastStep = got.through; return; }
        line.columns.steps.add(steps);
        line.columns.values.add(got.values);
        line.columns.wall.add(got.wall);
        line.steps = line.columns.steps.view();
        line.values = line.columns.values.view();
        line.wall = line.columns.wall.view();
        line.lastStep = got.through === null ? steps[steps.length - 1] : got.through;
        line.version += 1;
        if (got.more) due.push(line);
      });
      if (onBatch && due.length) onBatch();
    }
  }
}

// (SeriesFeed) The points of `line`'s series past `after` and up to `through` (null: no bound),
// downsampled to `buckets` pixel columns (null: every point, read page by page): columns
// {steps, values, wall, downsampled}, or null when the server said no (this.error says why).
SeriesFeed.prototype.range = async function (line, after, through, buckets) {
  const cols = { steps: charts.growable(), values: charts.growable(), wall: charts.growable() };
  let downsampled = false;
  for (let pages = 0; pages < 10000; pages++) {
    const query = [{ name: line.name, agent_id: line.agent_id, after_step: after, through_step: through }];
    const reply = await watch.api(watch.apiUrl(this.runId, "series/points") + "?encoding=base64" +
      (buckets ? "&buckets=" + buckets : "") + "&series=" + encodeURIComponent(JSON.stringify(query)));
    if (!reply.ok) { this.error = reply.data.error; return null; }
    const got = reply.data.series[0];
    const steps = charts.float64s(got.steps);
    downsampled = downsampled || got.downsampled;
    cols.steps.add(steps);
    cols.values.add(charts.float64s(got.values));
    cols.wall.add(charts.float64s(got.wall));
    if (!got.more || !steps.length) break;
    after = steps[steps.length - 1];
  }
  return { steps: cols.steps.view(), values: cols.values.view(), wall: cols.wall.view(), downsampled };
};

// The series part of a page: a toolbar (glob filter, smoothing, x axis, agents apart), the list
// of series, and a chart per series name with a line per run (and agent).
class SeriesBoard {
  constructor(root, runIds, options) {
    this.root = root;
    this.feeds = runIds.map((id) => new SeriesFeed(id));
    this.options = options || {};
    this.panels = new Map();
    this.extra = [];  // other charts of the page that follow the toolbar (episode returns)
    this.settings = { glob: "*", weight: 0.6, mode: "step", split: false };
    const q = (sel) => root.querySelector(sel);
    this.globInput = q(".series-glob");
    this.slider = q(".smoothing");
    this.sliderValue = q(".smoothing-value");
    this.modeSelect = q(".x-mode");
    this.splitBox = q(".split-agents");
    this.list = q(".series-list");
    this.grid = q(".chart-grid");
    this.note = q(".series-note");
    this.settings.weight = Number(this.slider.value);
    this.sliderValue.textContent = this.slider.value;
    this.globInput.addEventListener("input", () => { this.settings.glob = this.globInput.value.trim() || "*"; this.refresh(); });
    this.slider.addEventListener("input", () => {
      this.settings.weight = Math.min(0.999, Math.max(0, Number(this.slider.value)));
      this.sliderValue.textContent = this.settings.weight.toFixed(3);
      this.render();
    });
    this.modeSelect.addEventListener("change", () => { this.settings.mode = this.modeSelect.value; this.render(); });
    this.splitBox.addEventListener("change", () => { this.settings.split = this.splitBox.checked; this.render(); });
    let pending = null;
    window.addEventListener("resize", () => {
      clearTimeout(pending);
      pending = setTimeout(() => { for (const p of this.allPanels()) p.resize(); }, 150);
    });
  }

  matcher() {
    try { return charts.globRegExp(this.settings.glob); } catch (e) { return /^$/; }
  }

  allPanels() { return [...this.panels.values(), ...this.extra]; }

  async poll() {
    const match = this.matcher();
    // every run's list, then the new points of all their lines together: a chart of several
    // runs' lines is read in one request
    const due = await Promise.all(this.feeds.map((feed) => feed.list((info) => match.test(info.name))));
    await SeriesFeed.follow(due.flat(), () => this.render());
    this.render();
  }

  refresh() { this.render(); this.poll(); }

  render() {
    const match = this.matcher();
    this.showList(match);
    const groups = new Map();
    const several = this.feeds.length > 1;
    this.feeds.forEach((feed, r) => {
      for (const info of feed.infos) {
        if (!match.test(info.name)) continue;
        const line = feed.lines.get(SeriesFeed.key(info.name, info.agent_id));
        if (!line || line.steps.length === 0) continue;
        const split = this.settings.split && info.agent_id !== null;
        const title = split ? info.name + " [" + info.agent_id + "]" : info.name;
        if (!groups.has(title)) groups.set(title, []);
        const parts = [];
        if (several) parts.push(feed.runId);
        if (info.agent_id !== null && !split) parts.push(info.agent_id);
        line.label = parts.join(" ") || info.name;
        line.runIndex = r;
        groups.get(title).push(line);
      }
    });
    for (const [title, panel] of this.panels) {
      if (!groups.has(title)) { panel.remove(); this.panels.delete(title); }
    }
    // one colour per run when several are compared (a run's agents then dashed apart), else per line
    for (const lines of groups.values()) {
      const seen = new Map();
      lines.forEach((l, i) => {
        const nth = seen.get(l.runIndex) || 0;
        seen.set(l.runIndex, nth + 1);
        l.color = watch.colors[(several ? l.runIndex : i) % watch.colors.length];
        l.dash = several && nth > 0 ? [2 + 2 * nth, 3] : undefined;
      });
    }
    const titles = [...groups.keys()].sort();
    let drawMs = 0;
    for (const title of titles) {
      let panel = this.panels.get(title);
      if (!panel) { panel = new ChartPanel(this.grid, title); this.panels.set(title, panel); }
      panel.update(groups.get(title), this.settings);
      drawMs += panel.drawMs;
    }
    // keep the charts in name order
    titles.forEach((title) => this.grid.appendChild(this.panels.get(title).box));
    for (const panel of this.extra) if (panel.lines.length) panel.update(panel.lines, this.settings);
    const problems = this.feeds.filter((f) => f.error).map((f) => f.runId + ": " + f.error);
    const none = this.feeds.every((f) => f.infos.length === 0);
    this.note.textContent = problems.join("\n") || (none ? "no series yet: a worker reports them with TelemetryEmitter.metrics(...) or its own lifecycle events" : "");
    this.note.hidden = !this.note.textContent;
    window.__watch.seriesCharts = titles;
    window.__watch.seriesDrawMs = drawMs;
  }

  showList(match) {
    const rows = [];
    this.feeds.forEach((feed, r) => {
      for (const info of feed.infos) {
        if (!match.test(info.name)) continue;
        const li = watch.el("li", null, { "data-series": info.name });
        const who = (this.feeds.length > 1 ? feed.runId + " " : "") + (info.agent_id === null ? "" : "[" + info.agent_id + "] ");
        li.appendChild(watch.el("span", info.name, { class: "series-name" }));
        li.appendChild(watch.el("span", " " + who + info.points + " points, last " +
          watch.num(Number(info.last_value), 4) + " at step " + info.last_step, { class: "muted" }));
        rows.push(li);
      }
    });
    this.list.replaceChildren(...rows);
    const total = this.feeds.reduce((n, f) => n + f.infos.length, 0);
    const refused = this.feeds.reduce((n, f) => n + ((f.counts || {}).refused || 0), 0);
    this.root.querySelector(".series-count").textContent = rows.length + " of " + total + " series" +
      (refused ? "; " + refused + " values refused (not numbers, or past the limits)" : "");
  }

  // The chart the tests and the benchmark read: its title -> the panel.
  panel(title) { return this.panels.get(title) || this.extra.find((p) => p.title === title) || null; }
}

// The toolbar and boxes a SeriesBoard fills (the run page and the compare page share it).
function seriesSection() {
  const section = watch.el("section", null, { class: "series-board", id: "series" });
  const h2 = watch.el("h2", "Series ");
  h2.appendChild(watch.el("span", "", { class: "muted series-count" }));
  section.appendChild(h2);
  const bar = watch.el("div", null, { class: "toolbar" });
  const glob = watch.el("label", "filter ");
  glob.appendChild(watch.el("input", null, { class: "series-glob", id: "series-glob", type: "search", placeholder: "glob, e.g. losses/*", value: "" }));
  bar.appendChild(glob);
  const smooth = watch.el("label", "smoothing ");
  smooth.appendChild(watch.el("input", null, { class: "smoothing", id: "smoothing", type: "range", min: "0", max: "0.999", step: "0.001", value: "0.6" }));
  smooth.appendChild(watch.el("span", "0.6", { class: "smoothing-value" }));
  bar.appendChild(smooth);
  const mode = watch.el("label", "x ");
  const select = watch.el("select", null, { class: "x-mode", id: "x-mode" });
  for (const [value, label] of Object.entries(charts.X_MODES)) select.appendChild(watch.el("option", label, { value }));
  mode.appendChild(select);
  bar.appendChild(mode);
  const split = watch.el("label", null);
  split.appendChild(watch.el("input", null, { class: "split-agents", id: "split-agents", type: "checkbox" }));
  split.appendChild(document.createTextNode(" a chart per agent"));
  bar.appendChild(split);
  bar.appendChild(watch.el("span", "drag to zoom, double-click to reset", { class: "muted" }));
  section.appendChild(bar);
  section.appendChild(watch.el("p", "", { class: "notice series-note", hidden: "" }));
  section.appendChild(watch.el("ul", null, { class: "series-list", id: "series-list" }));
  section.appendChild(watch.el("div", null, { class: "chart-grid", id: "chart-grid" }));
  return section;
}
