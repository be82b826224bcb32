// One job: eval score and proxy reward against step (two axes, KL where reported), the stop point
// and the delivered best checkpoint marked on the curve, the stop decision with its evidence, its
// quote beside what it measured, checkpoints, and a live log tail.
import { duration, el, runningSeconds, score } from "./format.js";
import { quoteView } from "./quote.js";

const LOG_POLL_MS = 2000;
const STEP_INCREMENTS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000];

export async function showJob(view, { api }, id) {
  let job = await api.get(`/v1/jobs/${id}`);
  const events = await api.all(`/v1/jobs/${id}/events?limit=1000`, (e) => e.seq);
  const stops = (await api.get(`/v1/jobs/${id}/decisions?stops_only=true`)).data;
  const checkpoints = (await api.get(`/v1/jobs/${id}/checkpoints`)).data;
  const evals = events.filter((e) => e.type === "eval");
  let cursor = events.length ? events[events.length - 1].seq : 0;

  const header = el("div", { class: "toolbar" });
  const chartBox = el("div", { class: "chart", id: "chart" });
  const decisions = el("section", { id: "decision" });
  const quote = el("div", {}, quoteView(job));
  const log = el("pre", { id: "log", class: "log", tabindex: 0, "aria-label": "Log tail" });
  view.append(header, chartBox, decisions, quote,
    el("section", {}, el("h2", { text: "Checkpoints" }), checkpointTable(checkpoints, api, id)),
    el("section", {}, el("h2", { text: "Log" }), log));

  const drawHeader = () => header.replaceChildren(
    el("h1", { text: job.id }),
    el("span", { class: `state ${job.status}`, id: "job-state", text: job.status }),
    el("span", { class: "muted", text: `${job.tenant_name} · ${job.gpus} GPU · ` +
      `sandbox: ${job.sandbox || "unknown"} · ` +
      `${duration(runningSeconds(job))}${job.stop_reason ? ` · ${job.stop_reason}` : ""}` }));
  drawHeader();
  const chart = evalChart(chartBox, evals, job, stops);
  decisions.append(...stops.map((d) => decisionView(d, evals)));

  const stopStream = api.follow(`/v1/jobs/${id}/events?stream=true&after=${cursor}`, async (type, e) => {
    cursor = e.seq;
    if (type === "eval") { evals.push(e); chart.update(evals, job, stops); }
    if (type === "state" || type === "decision" || type === "checkpoint") {
      job = await api.get(`/v1/jobs/${id}`);
      if (type === "decision") {
        const fresh = (await api.get(`/v1/jobs/${id}/decisions?stops_only=true`)).data;
        stops.splice(0, stops.length, ...fresh);
        decisions.replaceChildren(...stops.map((d) => decisionView(d, evals)));
      }
      drawHeader();
      quote.replaceChildren(quoteView(job));
      chart.update(evals, job, stops);
    }
  });
  const tail = async () => { log.textContent = await api.get(`/v1/jobs/${id}/logs?tail=200`); };
  await tail();
  const poll = setInterval(() => { if (!job.finished_at) tail(); }, LOG_POLL_MS);
  return () => { stopStream(); clearInterval(poll); chart.destroy(); };
}

function series(evals) {
  const steps = evals.map((e) => e.data.step);
  const pick = (key) => evals.map((e) => e.data[key] ?? null);
  const hasKl = evals.some((e) => e.data.kl !== undefined && e.data.kl !== null);
  return { data: [steps, pick("score"), pick("proxy"), ...(hasKl ? [pick("kl")] : [])], hasKl };
}

// The points the markers sit on: where the rule stopped the job, and the delivered checkpoint.
function markers(evals, job, stops) {
  const bySeq = new Map(evals.map((e) => [e.seq, e.data.step]));
  const live = stops.filter((d) => !d.shadow);
  const out = [];
  if (live.length) {
    out.push({ kind: "stop", step: bySeq.get(live[0].event_seq),
      label: `stop @ ${bySeq.get(live[0].event_seq)}` });
  }
  if (job.best_checkpoint) {
    out.push({ kind: "best", step: job.best_checkpoint.step,
      label: `best @ ${job.best_checkpoint.step}` });
  }
  return out;
}

function evalChart(box, evals, job, stops) {
  let { data, hasKl } = series(evals);
  let marks = markers(evals, job, stops);
  const overlay = el("div", { class: "markers" });
  const opts = () => ({
    width: Math.max(box.clientWidth, 300), height: 320,
    scales: { x: { time: false } },
    axes: [
      { label: "step", incrs: STEP_INCREMENTS },
      { label: "eval score", scale: "eval" },
      { label: hasKl ? "proxy / KL" : "proxy reward", scale: "proxy", side: 1,
        grid: { show: false } },
    ],
    series: [
      { label: "step" },
      { label: "eval score", scale: "eval", stroke: "#1f6feb", width: 2 },
      { label: "proxy reward", scale: "proxy", stroke: "#d1242f", width: 1.5, dash: [6, 4] },
      ...(hasKl ? [{ label: "KL", scale: "proxy", stroke: "#8250df", width: 1 }] : []),
    ],
    hooks: {
      draw: [(u) => placeMarkers(u, overlay, marks)],
      ready: [showLatest], setCursor: [showLatest], setData: [showLatest],
    },
  });
  let plot = new uPlot(opts(), data, box);
  const resize = () => plot.setSize({ width: Math.max(box.clientWidth, 300), height: 320 });
  window.addEventListener("resize", resize);
  return {
    update(newEvals, newJob, newStops) {
      const next = series(newEvals);
      marks = markers(newEvals, newJob, newStops);
      if (next.hasKl !== hasKl) {
        ({ data, hasKl } = next);
        plot.destroy();
        plot = new uPlot(opts(), data, box);
      } else {
        data = next.data;
        plot.setData(data);
      }
    },
    destroy() { window.removeEventListener("resize", resize); plot.destroy(); },
  };
}

// Away from the cursor the legend holds the latest eval's values (uPlot's own shows "--").
function showLatest(u) {
  if (u.cursor.idx === null || u.cursor.idx === undefined) {
    if (u.data[0].length) u.setLegend({ idx: u.data[0].length - 1 }, false);
  }
}

// Markers are elements in uPlot's overlay of the plotting area (a vertical rule and a label), so
// they are read by screen readers and found by tests, not only painted.
function placeMarkers(u, overlay, marks) {
  if (overlay.parentElement !== u.over) u.over.append(overlay);
  overlay.replaceChildren(...marks.filter((m) => m.step !== undefined).map((m) =>
    el("div", { class: `marker marker-${m.kind}`, "data-step": m.step, role: "note",
      style: `left:${u.valToPos(m.step, "x")}px` }, el("span", { text: m.label }))));
}

function decisionView(decision, evals) {
  const { from_seq: from, to_seq: to } = decision.evidence;
  const rested = evals.filter((e) => e.seq >= from && e.seq <= to);
  return el("div", { class: "card", "data-decision": decision.id },
    el("h2", { text: `${decision.shadow ? "Shadow stop (advice only)" : "Stopped"}: ${decision.rule}` }),
    el("p", { text: `${decision.reason}: rested on ${decision.evidence.evals} evals` }),
    el("table", { class: "evidence" },
      el("thead", {}, el("tr", {}, ...["seq", "step", "eval score", "proxy"].map(
        (h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, ...rested.map((e) => el("tr", {},
        el("td", { text: e.seq }), el("td", { text: e.data.step }),
        el("td", { class: "num", text: score(e.data.score) }),
        el("td", { class: "num", text: score(e.data.proxy) }))))));
}

// Names relative to the job's directory (never a server path); a stored checkpoint's files are
// listed on demand and each one downloads with the key (a plain link cannot send it).
function checkpointTable(checkpoints, api, jobId) {
  if (!checkpoints.length) return el("p", { class: "muted", text: "No checkpoints." });
  return el("table", { id: "checkpoints" },
    el("thead", {}, el("tr", {}, ...["step", "eval", "name", "", "files"].map(
      (h) => el("th", { scope: "col", text: h })))),
    el("tbody", {}, ...checkpoints.map((c) => el("tr", { "data-best": c.is_best ? "true" : null },
      el("td", { text: c.step }), el("td", { class: "num", text: score(c.metrics.eval) }),
      el("td", { class: "path", text: c.path }),
      el("td", { text: c.is_best ? "delivered (best by eval)" : "" }),
      el("td", {}, c.stored ? filesCell(api, jobId, c) : el("span", { class: "muted", text: "pruned" }))))));
}

function filesCell(api, jobId, checkpoint) {
  const save = (f) => (event) => { event.preventDefault(); api.download(f.url, f.name); };
  const list = async () => {
    const files = (await api.get(`/v1/jobs/${jobId}/checkpoints/${checkpoint.id}/files`)).data;
    cell.replaceChildren(el("ul", {}, ...files.map((f) => el("li", {},
      el("a", { href: f.url, text: `${f.name} (${f.size} B)`, onclick: save(f) })))));
  };
  const cell = el("div", { class: "files" }, el("button", { type: "button", text: "files", onclick: list }));
  return cell;
}
