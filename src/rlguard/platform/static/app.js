// Sign-in and the router: #/jobs (the live table), #/jobs/<id> (one job), #/cluster.
import { Api, ApiError } from "./api.js";
import { showCluster } from "./cluster.js";
import { showJob } from "./job.js";
import { showJobs } from "./jobs.js";

const KEY = "rlguard.key";
const $ = (id) => document.getElementById(id);
let session = null; // { api, usage }
let leave = () => {}; // stops the current view's streams and timers

async function signIn(key) {
  const api = new Api(key);
  const usage = await api.get("/v1/usage");
  sessionStorage.setItem(KEY, key);
  session = { api, usage, admin: usage.key_scopes.includes("admin") };
  $("who").textContent = `${usage.name}${session.admin ? " (admin)" : ""}`;
  $("sign-in").hidden = true;
  $("nav").hidden = $("sign-out").hidden = false;
  route();
}

function signOut(message = "") {
  leave();
  sessionStorage.removeItem(KEY);
  session = null;
  $("view").replaceChildren();
  $("who").textContent = "";
  $("nav").hidden = $("sign-out").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message;
  $("key").focus();
}

async function route() {
  if (!session) return;
  leave();
  const view = $("view");
  view.replaceChildren();
  const [, page, id] = (location.hash || "#/jobs").split("/");
  for (const link of document.querySelectorAll("nav a")) {
    link.toggleAttribute("aria-current", link.getAttribute("href") === `#/${page}`);
  }
  try {
    if (page === "jobs" && id) leave = await showJob(view, session, decodeURIComponent(id));
    else if (page === "cluster") leave = await showCluster(view, session);
    else leave = await showJobs(view, session);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) signOut(error.message);
    else view.replaceChildren(Object.assign(document.createElement("p"), {
      className: "error", role: "alert", textContent: error.message,
    }));
  }
}

$("sign-in").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("sign-in-error").textContent = "";
  try {
    await signIn($("key").value.trim());
  } catch (error) {
    const reason = error instanceof ApiError ? error.message : String(error);
    $("sign-in-error").textContent = `This key was refused: ${reason}`;
  }
});
$("sign-out").addEventListener("click", () => signOut());
window.addEventListener("hashchange", route);

const saved = sessionStorage.getItem(KEY);
if (saved) signIn(saved).catch((error) => signOut(error.message));
else signOut();
