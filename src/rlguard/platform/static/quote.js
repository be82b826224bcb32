// A job's quote (the calibrated simulator's step for its setup, with the leave-one-run-out band
// and the range its host alone could move it), its budget, and what it measured once finished.
import { duration, el } from "./format.js";

const PHASES = ["generation", "scoring", "training", "total"];
const secs = (x) => (x === null || x === undefined ? "" : `${Number(x).toFixed(1)} s`);
const hours = (x) => (x === null || x === undefined ? "" : `${Number(x).toPrecision(3)} GPU-h`);

export function quoteView(job) {
  const q = job.quote;
  const box = el("section", { id: "quote", class: "card" }, el("h2", { text: "Quote" }));
  if (!q || q.status !== "quoted") {
    box.append(el("p", { class: "muted", text: q ? q.reason : "no quote (submitted before quotes)" }));
    return withBudget(box, job);
  }
  const band = q.band;
  const measured = (job.measured && job.measured.step_s) || {};
  box.append(
    el("p", { text: `${q.steps} steps of ${q.model} on ${q.n_gpus} ${q.gpu} (rollout TP ${q.rollout_tp}): ` +
      `${duration(q.total_s)}, ${hours(q.gpu_hours)}` +
      (band ? ` (band ${hours(band.gpu_hours[0])} – ${hours(band.gpu_hours[1])})` : " (no band)") +
      ` · estimate_s from ${job.estimate_source}` }),
    el("table", { class: "quote" },
      el("thead", {}, el("tr", {}, ...["phase", "quoted step", "band", "measured step"].map(
        (h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, ...PHASES.map((p) => el("tr", { "data-phase": p },
        el("td", { text: p }), el("td", { class: "num", text: secs(q.step_s[p]) }),
        el("td", { class: "num", text: band ? `${secs(band.step_s[p][0])} – ${secs(band.step_s[p][1])}` : "" }),
        el("td", { class: "num", text: secs(measured[p]) }))))),
    el("p", { class: "muted", text: band ? `band: ${band.source}` : "" }),
    ...(q.host_range ? [el("p", { id: "host-range", text:
      `on the calibration's fastest to slowest hosts (per-op work x ${q.host_range.factors[0]} to ` +
      `x ${q.host_range.factors[1]}): ${hours(q.host_range.gpu_hours[0])} – ` +
      `${hours(q.host_range.gpu_hours[1])}` })] : []),
    ...(q.outside_domain || []).map((note) => el("p", { class: "caveat", text: `outside the band's domain: ${note}` })));
  return withBudget(box, job);
}

function withBudget(box, job) {
  const m = job.measured;
  const parts = [];
  if (job.budget_gpu_hours) parts.push(`budget ${hours(job.budget_gpu_hours)}`);
  if (m) {
    parts.push(`measured ${hours(m.gpu_hours)} at progress ${Number(m.progress).toFixed(2)}` +
      (m.projected_gpu_hours ? ` (pace: ${hours(m.projected_gpu_hours)} to the end)` : ""));
  }
  if (parts.length) box.append(el("p", { id: "budget", text: parts.join(" · ") }));
  return box;
}
