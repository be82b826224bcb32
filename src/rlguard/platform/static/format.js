// Small DOM and number helpers shared by the views.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined || seconds < 0) return "";
  const s = Math.floor(seconds);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return h ? `${h}h ${m}m` : m ? `${m}m ${s % 60}s` : `${s}s`;
}

export function runningSeconds(job, now = Date.now() / 1000) {
  if (!job.started_at) return null;
  return (job.finished_at || now) - job.started_at;
}

export const score = (x) => (x === null || x === undefined ? "" : Number(x).toFixed(4));
