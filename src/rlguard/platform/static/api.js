// The platform's HTTP API as the page uses it: the key as a Bearer header on every request, and
// server-sent events read with fetch (EventSource cannot send an Authorization header).

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message || `HTTP ${status}`);
    this.status = status;
  }
}

export class Api {
  constructor(key) {
    this.key = key;
  }

  async get(path) {
    return this.request("GET", path);
  }

  async post(path, body) {
    return this.request("POST", path, body);
  }

  async request(method, path, body) {
    const headers = { Authorization: `Bearer ${this.key}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) {
      let parsed = null;
      try { parsed = JSON.parse(text); } catch { /* not JSON: the status says it */ }
      throw new ApiError(response.status, parsed);
    }
    const type = response.headers.get("content-type") || "";
    return type.startsWith("application/json") ? JSON.parse(text) : text;
  }

  // Save a file the API streams (a checkpoint's), sending the key a plain link cannot.
  async download(path, name) {
    const response = await fetch(path, { headers: { Authorization: `Bearer ${this.key}` } });
    if (!response.ok) throw new ApiError(response.status, null);
    const url = URL.createObjectURL(await response.blob());
    const link = Object.assign(document.createElement("a"), { href: url, download: name.split("/").pop() });
    link.click();
    URL.revokeObjectURL(url);
  }

  // Every item of a paged list (`has_more`, cursor `after`).
  async all(path, cursorOf) {
    const items = [];
    let after = null;
    for (;;) {
      const sep = path.includes("?") ? "&" : "?";
      const page = await this.get(after === null ? path : `${path}${sep}after=${after}`);
      items.push(...page.data);
      if (!page.has_more || page.data.length === 0) return items;
      after = cursorOf(page.data[page.data.length - 1]);
    }
  }

  // Follow a server-sent event stream; `onEvent(type, data)` per event. Returns a stop function.
  follow(path, onEvent) {
    const controller = new AbortController();
    const run = async () => {
      const response = await fetch(path, {
        headers: { Authorization: `Bearer ${this.key}`, Accept: "text/event-stream" },
        signal: controller.signal,
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value.replaceAll("\r\n", "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let type = "message";
          const data = [];
          for (const line of block.split("\n")) {
            if (line.startsWith("event:")) type = line.slice(6).trim();
            else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
          }
          if (data.length) onEvent(type, JSON.parse(data.join("\n")));
        }
      }
    };
    run().catch((error) => {
      if (error.name !== "AbortError") console.warn("stream ended", path, error);
    });
    return () => controller.abort();
  }
}
