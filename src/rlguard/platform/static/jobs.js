// The jobs table: every job the key sees, kept live by the platform's event stream.
import { duration, el, runningSeconds, score } from "./format.js";

const STATES = ["validating", "queued", "starting", "running", "stopping", "paused",
  "succeeded", "early_stopped", "failed", "cancelled"];
const REFRESH_MS = 250; // changed jobs are fetched again at most this often

export async function showJobs(view, { api, admin, usage }) {
  // The stream's starting point first, then the table: no change falls between them.
  const newest = await api.get("/v1/events?order=desc&limit=1");
  const cursor = newest.data.length ? newest.data[0].id : 0;
  const jobs = new Map();
  for (const job of await api.all("/v1/jobs?limit=1000", (j) => j.id)) jobs.set(job.id, job);

  const state = el("select", { id: "filter-state", "aria-label": "Filter by state" },
    el("option", { value: "", text: "all states" }),
    ...STATES.map((s) => el("option", { value: s, text: s })));
  const tenant = el("select", { id: "filter-tenant", "aria-label": "Filter by tenant" });
  const body = el("tbody");
  const count = el("span", { class: "muted", id: "job-count" });
  const canSubmit = admin || usage.key_scopes.includes("submit");
  view.append(
    el("div", { class: "toolbar" }, el("h1", { text: "Jobs" }), count, state, tenant),
    canSubmit ? submitForm(api, jobs, render) : null,
    el("div", { class: "scroll" }, el("table", { id: "jobs" },
      el("thead", {}, el("tr", {}, ...["Job", "State", "Tenant", "Queue", "GPUs", "Sandbox",
        "Running", "Latest eval", "Stop reason", ""].map((h) => el("th", { scope: "col", text: h })))),
      body)),
  );

  function tenants() {
    const names = [...new Set([...jobs.values()].map((j) => j.tenant_name))].sort();
    const chosen = tenant.value;
    tenant.replaceChildren(el("option", { value: "", text: "all tenants" }),
      ...names.map((n) => el("option", { value: n, text: n, selected: n === chosen })));
    tenant.hidden = names.length < 2 && !admin;
  }

  function row(job) {
    const cancel = canSubmit && !["succeeded", "early_stopped", "failed", "cancelled"].includes(job.status)
      ? el("button", { type: "button", class: "small", text: "Cancel",
        "aria-label": `Cancel ${job.id}`,
        onclick: async () => upsert(await api.post(`/v1/jobs/${job.id}/cancel`)) })
      : null;
    const latest = job.latest_eval;
    return el("tr", { "data-job": job.id, "data-state": job.status },
      el("td", {}, el("a", { href: `#/jobs/${job.id}`, text: job.id })),
      el("td", {}, el("span", { class: `state ${job.status}`, text: job.status })),
      el("td", { text: job.tenant_name }),
      el("td", { text: job.queue_position ?? "" }),
      el("td", { class: "num", text: job.gpus }),
      el("td", { class: job.sandbox === "bwrap" ? "sandbox" : "sandbox none", text: job.sandbox || "" }),
      el("td", { class: "num", "data-running": "", text: duration(runningSeconds(job)) }),
      el("td", { class: "num", text: latest ? `${score(latest.score)} @ ${latest.step}` : "" }),
      el("td", { class: "reason", text: job.stop_reason || "" }),
      el("td", {}, cancel));
  }

  function render() {
    tenants();
    const shown = [...jobs.values()]
      .filter((j) => !state.value || j.status === state.value)
      .filter((j) => !tenant.value || j.tenant_name === tenant.value)
      .sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? 1 : -1));
    body.replaceChildren(...shown.map(row));
    count.textContent = `${shown.length} of ${jobs.size}`;
  }

  function upsert(job) {
    jobs.set(job.id, job);
    render();
  }

  const changed = new Set();
  let timer = null;
  async function refresh() {
    timer = null;
    const ids = [...changed];
    changed.clear();
    const fetched = await Promise.all(ids.map((id) => api.get(`/v1/jobs/${id}`)));
    for (const job of fetched) jobs.set(job.id, job);
    render();
  }
  const stop = api.follow(`/v1/events?stream=true&after=${cursor}`, (_type, event) => {
    changed.add(event.job);
    timer ??= setTimeout(refresh, REFRESH_MS);
  });
  state.addEventListener("change", render);
  tenant.addEventListener("change", render);
  const tick = setInterval(() => {
    for (const cell of body.querySelectorAll("td[data-running]")) {
      const job = jobs.get(cell.parentElement.dataset.job);
      if (job && !job.finished_at) cell.textContent = duration(runningSeconds(job));
    }
  }, 1000);
  render();
  return () => { stop(); clearInterval(tick); clearTimeout(timer); };
}

function submitForm(api, jobs, render) {
  const command = el("input", { id: "submit-command", required: true, placeholder: "python train.py",
    "aria-label": "Command" });
  const gpus = el("input", { id: "submit-gpus", type: "number", min: 1, value: 1, required: true,
    "aria-label": "GPUs" });
  const error = el("span", { class: "error", role: "alert" });
  return el("form", {
    class: "toolbar submit", onsubmit: async (event) => {
      event.preventDefault();
      error.textContent = "";
      try {
        const job = await api.post("/v1/jobs", { command: command.value, gpus: Number(gpus.value) });
        jobs.set(job.id, job);
        render();
        command.value = "";
      } catch (e) {
        error.textContent = e.message;
      }
    },
  }, el("label", { for: "submit-command", text: "Command job" }), command,
  el("label", { for: "submit-gpus", text: "GPUs" }), gpus,
  el("button", { type: "submit", text: "Submit" }), error);
}
