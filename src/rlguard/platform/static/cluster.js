// The cluster: GPUs in use, who held them over time, usage against quota (the caller's tenant;
// every tenant for an admin key), the GPU-hours early stops freed and the queue, refreshed while
// the page is open.
import { el } from "./format.js";
import { occupancyTimeline } from "./timeline.js";

const POLL_MS = 2000;

export async function showCluster(view, { api, admin }) {
  const box = el("div");
  view.append(el("h1", { text: "Cluster" }), box);
  async function draw() {
    const [cluster, occupancy, tenants] = await Promise.all([
      api.get("/v1/cluster"), api.get("/v1/cluster/occupancy?window_s=1800"),
      admin ? api.get("/v1/usage/tenants").then((p) => p.data)
        : api.get("/v1/usage").then((u) => [u]),
    ]);
    const freed = tenants.reduce((sum, t) => sum + t.gpu_hours_freed, 0);
    box.replaceChildren(
      el("div", { class: "stats" },
        stat("GPUs in use", `${cluster.gpus_in_use} of ${cluster.gpus}`, "gpus-in-use"),
        stat("Running jobs", cluster.running),
        stat("Queued jobs", cluster.queued),
        stat("Policy", `${cluster.policy} · ${cluster.stop_rule.rule}`),
        stat("GPU-hours freed by early stops", freed.toFixed(4), "gpu-hours-freed")),
      el("h2", { text: "GPU occupancy (up to the last 30 minutes)" }),
      el("div", { class: "scroll" },
        occupancyTimeline(occupancy, cluster.gpus, Math.max(view.clientWidth - 8, 480))),
      el("p", { class: "muted", text: "One bar per run on the GPUs it held (hover for the job). " +
        "Grey: another tenant's job. Red outline: stopped by the stop rule." }),
      el("h2", { text: admin ? "Tenants: usage against quota" : "Usage against quota" }),
      el("div", { class: "scroll" }, usageTable(tenants)),
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

function usageTable(tenants) {
  return el("table", { id: "usage" },
    el("thead", {}, el("tr", {}, ...["tenant", "GPUs in use", "", "weight", "GPU-hours",
      "GPU-hours freed"].map((h) => el("th", { scope: "col", text: h })))),
    el("tbody", {}, ...tenants.map((t) => el("tr", { "data-tenant": t.name },
      el("td", { text: t.name }),
      el("td", { class: "num", text: `${t.gpus_in_use} of ${t.quota_gpus}` }),
      el("td", {}, el("meter", { min: 0, max: Math.max(t.quota_gpus, 1), value: t.gpus_in_use,
        "aria-label": `${t.name}: GPUs in use against quota` })),
      el("td", { class: "num", text: t.weight }),
      el("td", { class: "num", text: t.gpu_hours.toFixed(4) }),
      el("td", { class: "num", text: t.gpu_hours_freed.toFixed(4) })))));
}
