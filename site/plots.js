// Inline SVG plots of a predictions document (pyapp.predict.predictions.PredictionsDocument). They draw
// exactly the numbers the document holds: calibration cells (mean predicted probability,
// observed rate, Wilson interval) and predicted vs observed cost per held-out task.
// No DOM lookups here: each function returns an <svg> element.

import { PLOT_COLOURS, PLOT_OTHER_COLOUR, PLOT_SHAPES } from "./lab_protocol.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 760;
const H = 420;
const M = { left: 70, right: 270, top: 64, bottom: 56 };
// The series' colours and marker shapes are pyapp/report/plots.py's, generated.
const COLOURS = PLOT_COLOURS;
const SHAPES = PLOT_SHAPES;

function el(name, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

function marker(shape, x, y, colour, title) {
  const r = 5;
  let node;
  if (shape === "square") node = el("rect", { x: x - r, y: y - r, width: 2 * r, height: 2 * r });
  else if (shape === "diamond") node = el("polygon", { points: `${x},${y - r - 1} ${x + r + 1},${y} ${x},${y + r + 1} ${x - r - 1},${y}` });
  else if (shape === "triangle") node = el("polygon", { points: `${x},${y - r - 1} ${x + r + 1},${y + r} ${x - r - 1},${y + r}` });
  else node = el("circle", { cx: x, cy: y, r });
  node.setAttribute("fill", colour);
  node.setAttribute("fill-opacity", "0.85");
  node.setAttribute("stroke", "#000");
  node.setAttribute("stroke-width", "0.5");
  node.append(el("title", {}, title));
  return node;
}

// Round tick values inside [lo, hi], about `count` of them.
export function niceTicks(lo, hi, count = 5) {
  const raw = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * power).find((candidate) => candidate >= raw) ?? 10 * power;
  const ticks = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + 1e-9; v += step) ticks.push(Math.abs(v) < 1e-12 ? 0 : v);
  return ticks;
}

// The axis range a set of values needs: where the points are, padded so that no point sits on
// the frame (where the tick labels are), at least `minWidth` wide, within [floor, ceil] padded.
export function span(values, { floor = -Infinity, ceil = Infinity, minWidth = 0 } = {}) {
  const finite = values.filter((v) => Number.isFinite(v));
  if (!finite.length) return [Math.max(floor, 0), Math.min(ceil, 1)];
  let lo = Math.min(...finite);
  let hi = Math.max(...finite);
  if (hi - lo < minWidth) {
    const middle = (lo + hi) / 2;
    lo = Math.max(floor, middle - minWidth / 2);
    hi = lo + minWidth;
    if (hi > ceil) [lo, hi] = [ceil - minWidth, ceil];
  }
  const pad = (hi - lo) * 0.08;
  return [Math.max(floor - pad, lo - pad), Math.min(ceil + pad, hi + pad)];
}

function frame(svg, { title, subtitle, label, xLabel, yLabel, x: [xMin, xMax], y: [yMin, yMax], format }) {
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const sx = (v) => M.left + ((v - xMin) / (xMax - xMin)) * plotW;
  const sy = (v) => M.top + plotH - ((v - yMin) / (yMax - yMin)) * plotH;
  svg.append(el("text", { x: M.left, y: 18, "font-size": 14, "font-weight": 600 }, title));
  if (subtitle) svg.append(el("text", { x: M.left, y: 34, "font-size": 11, fill: "#5f6368" }, subtitle));
  if (label) {
    // the run's evidence label (not model evidence), as the report's plots say it
    const text = `${label[0].toUpperCase()}${label.slice(1)}.`;
    svg.append(el("text", { x: M.left, y: 50, "font-size": 11, "font-weight": 700, fill: "#b06000", class: "fixture" }, text));
  }
  svg.append(el("rect", { x: M.left, y: M.top, width: plotW, height: plotH, fill: "none", stroke: "#999" }));
  const xTicks = niceTicks(xMin, xMax);
  const yTicks = niceTicks(yMin, yMax);
  for (const xv of xTicks) {
    svg.append(el("line", { x1: sx(xv), x2: sx(xv), y1: M.top + plotH, y2: M.top + plotH + 4, stroke: "#666" }));
    svg.append(el("text", { x: sx(xv), y: M.top + plotH + 16, "font-size": 11, "text-anchor": "middle", class: "tick" }, format(xv, xTicks)));
  }
  for (const yv of yTicks) {
    svg.append(el("line", { x1: M.left - 4, x2: M.left, y1: sy(yv), y2: sy(yv), stroke: "#666" }));
    svg.append(el("text", { x: M.left - 7, y: sy(yv) + 4, "font-size": 11, "text-anchor": "end", class: "tick" }, format(yv, yTicks)));
    svg.append(el("line", { x1: M.left, x2: M.left + plotW, y1: sy(yv), y2: sy(yv), stroke: "#ddd", "stroke-width": 0.5 }));
  }
  svg.append(el("text", { x: M.left + plotW / 2, y: H - 14, "font-size": 12, "text-anchor": "middle" }, xLabel));
  svg.append(
    el("text", { x: 16, y: M.top + plotH / 2, "font-size": 12, "text-anchor": "middle", transform: `rotate(-90 16 ${M.top + plotH / 2})` }, yLabel),
  );
  // y = x, where it crosses the plotted range
  const from = Math.max(xMin, yMin);
  const to = Math.min(xMax, yMax);
  if (to > from) svg.append(el("line", { x1: sx(from), y1: sy(from), x2: sx(to), y2: sy(to), stroke: "#777", "stroke-dasharray": "5 4", class: "identity" }));
  return { sx, sy, plotW, plotH };
}

function legend(svg, entries) {
  let y = M.top + 6;
  const x = W - M.right + 14;
  for (const entry of entries) {
    svg.append(marker(entry.shape, x, y, entry.colour, entry.label));
    svg.append(el("text", { x: x + 10, y: y + 4, "font-size": 11 }, entry.label));
    y += 18;
  }
  svg.append(el("line", { x1: x - 6, x2: x + 6, y1: y, y2: y, stroke: "#777", "stroke-dasharray": "5 4" }));
  svg.append(el("text", { x: x + 10, y: y + 4, "font-size": 11 }, "y = x (perfect)"));
}

// Tick labels with as many decimals as their step needs (0.05 apart: two).
function tickFormat(v, ticks) {
  const step = ticks.length > 1 ? ticks[1] - ticks[0] : 1;
  const digits = step >= 1 ? 0 : Math.min(4, (String(Number(step.toPrecision(3))).split(".")[1] ?? "").length);
  return v.toFixed(digits);
}

// The SVG fills the width it is given (CSS: figure.plot svg); the viewBox keeps its shape.
function newSvg(label) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": label, preserveAspectRatio: "xMinYMin meet" });
  svg.append(el("title", {}, label));
  return svg;
}

function calibrationSeries(doc) {
  const series = [];
  for (const result of doc.conditions) {
    const condition = result.frozen.profile.condition;
    series.push({ label: `${condition} (final answer, naive proxy)`, key: condition, cells: result.scores.calibration_final });
    if (condition === "controlled-chain") {
      series.push({ label: "controlled-chain (all steps)", key: "controlled-chain (all steps)", cells: result.scores.calibration_all_steps });
    }
  }
  return series;
}

// The calibration plot's axes for some documents (one, or every run compared: shared axes):
// zoomed to where the cells and their Wilson bars are, never past [0, 1] but padded.
export function calibrationDomain(docs) {
  const cells = docs.flatMap((doc) => calibrationSeries(doc).flatMap((s) => s.cells.filter((c) => c.n)));
  const x = span(cells.map((c) => c.mean_predicted), { floor: 0, ceil: 1, minWidth: 0.1 });
  const y = span(cells.flatMap((c) => [c.observed_rate, c.wilson_low, c.wilson_high]), { floor: 0, ceil: 1, minWidth: 0.1 });
  return { x, y };
}

// Calibration: for each condition's non-empty calibration cell, the mean predicted probability
// (x) against the observed rate (y) with its 95% Wilson interval as a vertical bar; n beside it.
// `domain`: shared axes ({x, y}) when several runs are drawn side by side.
export function calibrationPlot(doc, { label = null, domain = null } = {}) {
  const title = "Calibration: predicted probability vs observed outcome";
  const svg = newSvg(title);
  const { x: xRange, y: yRange } = domain ?? calibrationDomain([doc]);
  const { sx, sy } = frame(svg, {
    title,
    subtitle: "One point per non-empty cell; bars: 95% Wilson intervals (descriptive); n beside each; axes zoomed to the cells.",
    label,
    xLabel: "predicted probability (product of primitive rates)",
    yLabel: "observed rate",
    x: xRange,
    y: yRange,
    format: tickFormat,
  });
  const series = calibrationSeries(doc);
  const entries = [];
  const placed = [];
  series.forEach((s, i) => {
    const colour = COLOURS[s.key] ?? PLOT_OTHER_COLOUR;
    const shape = SHAPES[i % SHAPES.length];
    entries.push({ label: s.label, colour, shape });
    const group = el("g", { "data-series": s.key });
    for (const cell of s.cells) {
      if (!cell.n) continue;
      const x = sx(cell.mean_predicted);
      const offset = (i - (series.length - 1) / 2) * 3; // keep overlapping series apart
      group.append(el("line", { x1: x + offset, x2: x + offset, y1: sy(cell.wilson_low), y2: sy(cell.wilson_high), stroke: colour, "stroke-width": 2 }));
      for (const v of [cell.wilson_low, cell.wilson_high]) {
        group.append(el("line", { x1: x + offset - 4, x2: x + offset + 4, y1: sy(v), y2: sy(v), stroke: colour, "stroke-width": 2 }));
      }
      const text =
        `${s.label}: bin [${cell.low.toFixed(1)}, ${cell.high.toFixed(1)}), n = ${cell.n}, ` +
        `mean predicted ${cell.mean_predicted.toFixed(3)}, observed ${cell.observed_rate.toFixed(3)}, ` +
        `Wilson [${cell.wilson_low.toFixed(3)}, ${cell.wilson_high.toFixed(3)}]`;
      const point = marker(shape, x + offset, sy(cell.observed_rate), colour, text);
      point.setAttribute("class", "cell");
      group.append(point);
      const labelX = x + offset + 8;
      const labelY = labelLine(labelX, sy(cell.observed_rate), placed);
      group.append(el("text", { x: labelX, y: labelY, "font-size": 10 }, `n=${cell.n}`));
    }
    svg.append(group);
  });
  legend(svg, entries);
  return svg;
}

// The baseline of a point's "n=" label: just above the point, or the nearest line above or
// below it that no label already placed there uses (points of several series often fall on
// the same spot, and their labels would print over each other). Records the spot. (The
// report's pyapp/report/plots.py places them by the same rule.)
function labelLine(x, y, placed) {
  const offsets = [-6];
  for (let step = 1; step <= 8; step++) offsets.push(step * 11 - 6, -step * 11 - 6);
  let spot = y - 6;
  for (const offset of offsets) {
    spot = y + offset;
    if (placed.every(([px, py]) => Math.abs(px - x) >= 36 || Math.abs(py - spot) >= 11)) break;
  }
  placed.push([x, spot]);
  return spot;
}

function costPoints(doc) {
  const points = [];
  for (const result of doc.conditions) {
    const condition = result.frozen.profile.condition;
    const predicted = new Map(result.predictions.map((p) => [p.task_id, p]));
    for (const o of result.observations) {
      const p = predicted.get(o.task_id);
      if (!p || p.cost_ms === null || o.cost_ms === null) continue;
      points.push({ condition, task: o.task_id, predicted: p.cost_ms, observed: o.cost_ms });
    }
  }
  return points;
}

// The cost plot's axes (one range for both, so that y = x is the diagonal), shared when
// several runs are drawn side by side; from 0, up to where the points are.
export function costDomain(docs) {
  const values = docs.flatMap((doc) => costPoints(doc).flatMap((p) => [p.predicted, p.observed]));
  const range = span([0, ...values], { floor: 0, minWidth: 1 });
  return { x: range, y: range };
}

// Cost: each held-out task's predicted cost (sum of the ops' mean generation + execution time)
// against its observed generation + execution time, with the y = x line.
export function costPlot(doc, { label = null, domain = null } = {}) {
  const title = "Cost: predicted vs observed time per held-out task";
  const svg = newSvg(title);
  const points = costPoints(doc);
  const { x: xRange, y: yRange } = domain ?? costDomain([doc]);
  const { sx, sy } = frame(svg, {
    title,
    subtitle: "One point per held-out task: generation + execution wall time in ms; dashed: y = x.",
    label,
    xLabel: "predicted cost (ms): sum of primitive mean costs",
    yLabel: "observed cost (ms)",
    x: xRange,
    y: yRange,
    format: tickFormat,
  });
  const conditions = [...new Set(points.map((p) => p.condition))];
  const entries = conditions.map((condition, i) => ({ label: condition, colour: COLOURS[condition] ?? PLOT_OTHER_COLOUR, shape: SHAPES[i % SHAPES.length] }));
  for (const p of points) {
    const entry = entries.find((e) => e.label === p.condition);
    const text = `${p.condition} ${p.task}: predicted ${p.predicted.toFixed(1)} ms, observed ${p.observed.toFixed(1)} ms`;
    const point = marker(entry.shape, sx(p.predicted), sy(p.observed), entry.colour, text);
    point.setAttribute("class", "task");
    svg.append(point);
  }
  if (!points.length) {
    svg.append(el("text", { x: M.left + 20, y: M.top + 30, "font-size": 12 }, "No held-out observation with both costs yet."));
  }
  legend(svg, entries);
  return svg;
}
