// GPU occupancy over time as an SVG timeline: one lane per GPU, each run a bar on the lanes it
// held (lanes are assigned here, first free first: Ray does not say which device a run had).
// The caller's runs carry their job; another tenant's show only as GPUs held.

const SVG = "http://www.w3.org/2000/svg";
const LANE_PX = 22;
const AXIS_PX = 22;
const ENDS = { early_stop: "stopped by EvalStop", preempt: "preempted", cancel: "cancelled",
  pause: "paused", lost: "lost", exited: "exited" };

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function lanesOf(runs, gpus, now) {
  const freeAt = Array(gpus).fill(-Infinity);
  return runs.map((run) => {
    const free = freeAt.map((t, lane) => [t, lane]).filter(([t]) => t <= run.started_at);
    while (free.length < run.gpus) { freeAt.push(-Infinity); free.push([-Infinity, freeAt.length - 1]); }
    const lanes = free.slice(0, run.gpus).map(([, lane]) => lane);
    for (const lane of lanes) freeAt[lane] = run.ended_at ?? now;
    return lanes;
  });
}

const hue = (id) => [...id].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 360, 7);

// Ticks in the unit that fits the span shown.
function ago(seconds) {
  return seconds >= 120 ? `-${Math.round(seconds / 60)} min` : `-${Math.round(seconds)} s`;
}

export function occupancyTimeline(occupancy, gpus, width) {
  const { now, runs } = occupancy;
  // From the first run shown (the window's start at most) to now, so short histories fill it.
  const since = Math.max(occupancy.since, Math.min(now - 60, ...runs.map((r) => r.started_at)));
  const lanes = lanesOf(runs, gpus, now);
  const laneCount = Math.max(gpus, ...lanes.flat().map((l) => l + 1));
  const height = laneCount * LANE_PX + AXIS_PX;
  const x = (t) => 60 + ((Math.max(t, since) - since) / (now - since)) * (width - 70);
  const root = svg("svg", { width, height, role: "img", id: "occupancy",
    "aria-label": `GPU occupancy since ${ago(now - since)}` });
  for (let lane = 0; lane < laneCount; lane++) {
    root.append(svg("text", { x: 4, y: lane * LANE_PX + 15, class: "lane" }, `GPU ${lane}`));
    root.append(svg("line", { x1: 60, x2: width - 10, y1: (lane + 1) * LANE_PX,
      y2: (lane + 1) * LANE_PX, class: "grid" }));
  }
  runs.forEach((run, i) => {
    const end = run.ended_at ?? now;
    const label = run.job ? `${run.job} (attempt ${run.attempt})` : "another tenant's job";
    const why = run.ended_at ? ENDS[run.end_reason] || run.end_reason || "ended" : "running";
    for (const lane of lanes[i]) {
      const bar = svg("rect", {
        x: x(run.started_at), y: lane * LANE_PX + 3, width: Math.max(x(end) - x(run.started_at), 2),
        height: LANE_PX - 6, rx: 3,
        class: `run ${run.job ? "mine" : "other"} ${run.end_reason || ""}`,
        fill: run.job ? `hsl(${hue(run.job)} 55% 55%)` : "#8c959f",
        "data-job": run.job || "",
      });
      bar.append(svg("title", {}, `${label}: ${run.gpus} GPU, ${why}`));
      root.append(bar);
    }
  });
  for (const frac of [0, 0.25, 0.5, 0.75, 1]) {
    const t = since + frac * (now - since);
    const anchor = frac === 0 ? "start" : frac === 1 ? "end" : "middle";
    root.append(svg("text", { x: x(t), y: height - 6, class: "tick", "text-anchor": anchor },
      frac === 1 ? "now" : ago(now - t)));
  }
  return root;
}
