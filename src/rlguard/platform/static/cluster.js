// The cluster: GPUs in use, the queue, the caller's usage against its quota and the GPU-hours
// EvalStop freed, refreshed while the page is open.
import { el } from "./format.js";
import { occupancyTimeline } from "./timeline.js";

const POLL_MS = 2000;

export async function showCluster(view, { api }) {
  const box = el("div");
  view.append(el("h1", { text: "Cluster" }), box);
  async function draw() {
    const [cluster, usage, occupancy] = await Promise.all([
      api.get("/v1/cluster"), api.get("/v1/usage"), api.get("/v1/cluster/occupancy?window_s=1800"),
    ]);
    const used = Math.min(usage.gpus_in_use / Math.max(usage.quota_gpus, 1), 1);
    box.replaceChildren(
      el("div", { class: "stats" },
        stat("GPUs in use", `${cluster.gpus_in_use} of ${cluster.gpus}`, "gpus-in-use"),
        stat("Running jobs", cluster.running),
        stat("Queued jobs", cluster.queued),
        stat("Policy", `${cluster.policy} · ${cluster.stop_rule.rule}`),
        stat("GPU-hours freed by early stops", usage.gpu_hours_freed.toFixed(4), "gpu-hours-freed")),
      el("h2", { text: "GPU occupancy (up to the last 30 minutes)" }),
      el("div", { class: "scroll" },
        occupancyTimeline(occupancy, cluster.gpus, Math.max(view.clientWidth - 8, 480))),
      el("p", { class: "muted", text: "One bar per run on the GPUs it held (hover for the job). " +
        "Grey: another tenant's job. Red outline: stopped by the stop rule." }),
      el("h2", { text: `Usage of ${usage.name}` }),
      el("div", { class: "quota" },
        el("meter", { id: "quota", min: 0, max: usage.quota_gpus, value: usage.gpus_in_use,
          "aria-label": "GPUs in use against quota" }),
        el("span", { text: `${usage.gpus_in_use} of ${usage.quota_gpus} GPUs (quota)` }),
        el("span", { class: "muted", text: ` · ${(used * 100).toFixed(0)}%` })),
      el("h2", { text: "Queue" }),
      cluster.queue.length
        ? el("table", { id: "queue" },
          el("thead", {}, el("tr", {}, ...["position", "job", "GPUs"].map(
            (h) => el("th", { scope: "col", text: h })))),
          el("tbody", {}, ...cluster.queue.map((q) => el("tr", {},
            el("td", { text: q.position ?? "" }),
            el("td", {}, el("a", { href: `#/jobs/${q.job}`, text: q.job })),
            el("td", { text: q.gpus })))))
        : el("p", { class: "muted", text: "The queue is empty." }));
  }
  await draw();
  const poll = setInterval(() => draw().catch(() => {}), POLL_MS);
  return () => clearInterval(poll);
}

function stat(label, value, id) {
  return el("div", { class: "stat" }, el("div", { class: "muted", text: label }),
    el("div", { class: "value", id, text: value }));
}
