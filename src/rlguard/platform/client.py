"""The platform's small HTTP client: what tenants, the CLI and jobs import (nothing of the service).

`Client` speaks for a tenant (an API key). `JobReporter` speaks for a running job (its job token,
from the environment the platform starts it with) and retries a report until the server answers:
reports are idempotent by step, so a retry after a lost answer, or after a restart of the server,
is stored once. `PlatformRule` makes the platform a cluster `StopRule`: any code that takes a stop
rule (`EvalStopCallback`, the CGPO trainer's eval hooks) posts its evals and obeys the platform.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http import client as http_client
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from rlguard.cluster.events import CONTINUE, Decision, EvalEvent
from rlguard.cluster.stopping.base import StopRule

RETRY_S = 300.0
CHECKPOINT_WAIT_S = 3600.0
"""How long a report carrying a checkpoint waits for its answer: the platform answers once the
checkpoint is uploaded to its store (a 1 GB checkpoint to object storage takes a while)."""


class PlatformError(RuntimeError):
    """The platform refused a request: its status and OpenAI-style error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        error = body.get("error", {}) if isinstance(body, dict) else {}
        super().__init__(error.get("message") or f"HTTP {status}")
        self.status, self.code, self.param = status, error.get("code"), error.get("param")


class TransportError(Exception):
    """The platform was not reached, or the connection broke before its whole answer came (a
    refused or timed-out connection, a reset): nothing to read a refusal from."""


# The client is on the standard library's http.client rather than httpx (the project's HTTP
# client elsewhere): `import httpx` costs about 0.2-0.3 CPU-s (it imports its own CLI's click,
# rich and pygments when they are installed), most of what `rlguard jobs list` would take to
# start, and the platform's API needs only JSON over HTTP/1.1 (benchmarks/bench_cli_start.py).
# Each request opens its own connection: nothing to share between threads, no stale keep-alive
# to retry, and on the platform's own network a connect is cheap beside a request.

_ESCAPE = re.compile("(%[0-9A-Fa-f]{2})")
# a path's characters sent as they are (httpx's and WHATWG's path set); `%` only in an escape
_PATH_SAFE = "".join(chr(i) for i in range(0x21, 0x7F) if chr(i) not in '"#<>?`{}%')
_DEFAULT: Any = object()  # the connection's own timeout


def _quote_path(path: str) -> str:
    """A path as sent: what a URL may not hold percent-encoded, escapes already there kept."""
    return "".join(
        part if _ESCAPE.fullmatch(part) else quote(part, safe=_PATH_SAFE)
        for part in _ESCAPE.split(path)
    )


class Response:
    """An answer of the platform, read whole: status, headers, body."""

    def __init__(self, status_code: int, headers: Any, content: bytes) -> None:
        self.status_code, self.headers, self.content = status_code, headers, content

    @property
    def text(self) -> str:
        charset = self.headers.get_content_charset() if self.headers is not None else None
        return self.content.decode(charset or "utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


class _Streamed:
    """An answer whose body is read as it arrives (`Http.stream`)."""

    def __init__(self, raw: http_client.HTTPResponse) -> None:
        self.raw, self.status_code, self.headers = raw, raw.status, raw.headers

    def read(self) -> Response:
        with _transport():
            return Response(self.status_code, self.headers, self.raw.read())

    def iter_lines(self) -> Iterator[str]:
        """Lines as they arrive, without their line ends."""
        while True:
            with _transport():
                line = self.raw.readline()
            if not line:
                return
            yield line.decode("utf-8", errors="replace").rstrip("\r\n")

    def iter_bytes(self, size: int) -> Iterator[bytes]:
        while True:
            with _transport():
                chunk = self.raw.read(size)
            if not chunk:
                return
            yield chunk


@contextmanager
def _transport() -> Iterator[None]:
    """A failure to reach or hear the platform as a `TransportError` (and nothing else as one:
    an OSError of the caller, writing a download, stays what it is)."""
    try:
        yield
    except (OSError, http_client.HTTPException) as e:
        raise TransportError(str(e) or type(e).__name__) from e


class _UnixConnection(http_client.HTTPConnection):
    """HTTP over a unix socket (the URL's host only names the server in `Host:`)."""

    def __init__(self, host: str, path: str, timeout: float | None) -> None:
        super().__init__(host, timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        import socket

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class Http:
    """Requests to the platform at `url` (over TCP, or over the unix socket a sandboxed job is
    given: `RLGUARD_SOCKET`, the job's only way out), authorized by a bearer secret; JSON bodies.
    `timeout` bounds the connect and each wait for data (None: no bound)."""

    def __init__(
        self, url: str, secret: str, timeout: float | None = 30.0, socket: str | None = None
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the platform's URL must be http(s)://HOST[:PORT] (got {url!r})")
        self.scheme, self.netloc, self.socket = parts.scheme, parts.netloc, socket
        self.host, self.port = parts.hostname, parts.port
        self.base = parts.path.rstrip("/")
        self.timeout = timeout
        self.headers = {"Authorization": f"Bearer {secret}", "Accept": "*/*"}

    def _connection(self, timeout: float | None) -> http_client.HTTPConnection:
        if self.socket is not None:
            return _UnixConnection(self.netloc, self.socket, timeout)
        if self.scheme == "https":
            return http_client.HTTPSConnection(self.host, self.port, timeout=timeout)
        return http_client.HTTPConnection(self.host, self.port, timeout=timeout)

    @contextmanager
    def _exchange(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None,
        body: Any,
        timeout: float | None,
        read_timeout: float | None,
    ) -> Iterator[http_client.HTTPResponse]:
        target = path if "://" not in path else urlsplit(path).path
        target = self.base + _quote_path(target if target.startswith("/") else "/" + target)
        if params:
            target += "?" + urlencode(params)
        headers = dict(self.headers)
        payload = None
        if isinstance(body, bytes):  # a file's bytes (a working directory's zip)
            payload = body
            headers["Content-Type"] = "application/zip"
        elif body is not None:  # as httpx sends JSON: compact, UTF-8, NaN refused (ValueError)
            text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            payload = text.encode("utf-8")
            headers["Content-Type"] = "application/json"
        connection = self._connection(timeout)
        try:
            with _transport():
                connection.connect()
                connection.sock.settimeout(read_timeout)
                connection.request(method, target, body=payload, headers=headers)
                response = connection.getresponse()
            yield response
        finally:
            connection.close()

    def request(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        json: Any = None,
        timeout: float | None = _DEFAULT,
        content: bytes | None = None,
    ) -> Response:
        """One request (a JSON body, or `content`'s bytes as a zip); its whole answer."""
        timeout = self.timeout if timeout is _DEFAULT else timeout
        body = json if content is None else content
        with self._exchange(method, path, params, body, timeout, timeout) as raw:
            return _Streamed(raw).read()

    @contextmanager
    def stream(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        timeout: float | None = _DEFAULT,
        read_timeout: float | None = _DEFAULT,
    ) -> Iterator[_Streamed]:
        """One request whose answer is read as it arrives (`read_timeout`: the bound on each
        wait for data, `timeout` by default)."""
        timeout = self.timeout if timeout is _DEFAULT else timeout
        read_timeout = timeout if read_timeout is _DEFAULT else read_timeout
        with self._exchange(method, path, params, None, timeout, read_timeout) as raw:
            yield _Streamed(raw)

    def get(self, path: str, **kwargs: Any) -> Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Response:
        return self.request("POST", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Response:
        return self.request("DELETE", path, **kwargs)


def _retry_after(response: Response, default: float) -> float:
    """The seconds a refusal's Retry-After asks to wait (`default` without a number there)."""
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return default


def _checked(response: Response) -> Any:
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = {"error": {"message": response.text[:200]}}
        raise PlatformError(response.status_code, body)
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    return response.text


class Client:
    def __init__(
        self, url: str, api_key: str, timeout: float = 30.0, socket: str | None = None
    ) -> None:
        self.http = Http(url, api_key, timeout, socket)

    @classmethod
    def from_env(cls) -> Client:
        env = os.environ
        return cls(env["RLGUARD_URL"], env["RLGUARD_API_KEY"], socket=env.get("RLGUARD_SOCKET"))

    def submit(self, body: dict[str, Any]) -> dict[str, Any]:
        return _checked(self.http.post("/v1/jobs", json=body))

    def working_dir(self, archive: bytes) -> dict[str, Any]:
        """A working directory's zip (workdir.pack) on the platform, uploaded only if it does
        not hold those bytes already; its object (`id` is what a job's `working_dir` names)."""
        sha = f"sha256:{hashlib.sha256(archive).hexdigest()}"
        found = self.http.get(f"/v1/working_dirs/{sha}")
        if found.status_code == 200:
            return {**found.json(), "created": False}
        return _checked(self.http.post("/v1/working_dirs", content=archive, timeout=None))

    def jobs(
        self, limit: int = 20, after: str | None = None, status: str | None = None
    ) -> dict[str, Any]:
        params = {"limit": limit, "after": after, "status": status}
        wanted = {k: v for k, v in params.items() if v is not None}
        return _checked(self.http.get("/v1/jobs", params=wanted))

    def job(self, job_id: str) -> dict[str, Any]:
        return _checked(self.http.get(f"/v1/jobs/{job_id}"))

    def cancel(self, job_id: str) -> dict[str, Any]:
        return _checked(self.http.post(f"/v1/jobs/{job_id}/cancel"))

    def pause(self, job_id: str) -> dict[str, Any]:
        """Off the cluster until resumed (a running job checkpoints first): `stopping`, then
        `paused`; a queued one is `paused` at once."""
        return _checked(self.http.post(f"/v1/jobs/{job_id}/pause"))

    def resume(self, job_id: str) -> dict[str, Any]:
        """A paused job queued again; it resumes from its newest stored checkpoint."""
        return _checked(self.http.post(f"/v1/jobs/{job_id}/resume"))

    def events(self, job_id: str, after: int = 0, limit: int = 1000) -> dict[str, Any]:
        params = {"after": after, "limit": limit}
        return _checked(self.http.get(f"/v1/jobs/{job_id}/events", params=params))

    def all_events(self, job_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while True:
            page = self.events(job_id, after=found[-1]["seq"] if found else 0)
            found.extend(page["data"])
            if not page["has_more"]:
                return found

    def follow(self, job_id: str, after: int = 0) -> Iterator[dict[str, Any]]:
        """Every event from `after` on, as the server streams them, until the job has ended."""
        with self.http.stream(
            "GET",
            f"/v1/jobs/{job_id}/events",
            params={"after": after, "stream": "true"},
            timeout=None,
        ) as response:
            if response.status_code >= 400:
                _checked(response.read())
            for line in response.iter_lines():
                if line.startswith("data:"):
                    yield json.loads(line[5:].strip())

    def checkpoints(self, job_id: str) -> dict[str, Any]:
        return _checked(self.http.get(f"/v1/jobs/{job_id}/checkpoints"))

    def checkpoint_files(self, job_id: str, checkpoint_id: str) -> dict[str, Any]:
        """A stored checkpoint's files: name (relative to it), size, sha256, url."""
        return _checked(self.http.get(f"/v1/jobs/{job_id}/checkpoints/{checkpoint_id}/files"))

    def download(self, url: str, sink: Any) -> str:
        """Stream one file of a checkpoint (its `url`) into `sink`; the bytes' sha256."""
        import hashlib

        digest = hashlib.sha256()
        with self.http.stream("GET", url, timeout=30.0, read_timeout=None) as response:
            if response.status_code >= 400:
                _checked(response.read())
            for chunk in response.iter_bytes(1 << 20):
                digest.update(chunk)
                sink.write(chunk)
        return digest.hexdigest()

    def delete(self, job_id: str) -> dict[str, Any]:
        """Delete a finished job: its artifacts and its records."""
        return _checked(self.http.delete(f"/v1/jobs/{job_id}"))

    def decisions(self, job_id: str) -> dict[str, Any]:
        return _checked(self.http.get(f"/v1/jobs/{job_id}/decisions"))

    def usage(self) -> dict[str, Any]:
        return _checked(self.http.get("/v1/usage"))

    def cluster(self) -> dict[str, Any]:
        return _checked(self.http.get("/v1/cluster"))

    def wait(self, job_id: str, timeout_s: float = 600.0, poll_s: float = 0.5) -> dict[str, Any]:
        """The job once it has ended (raises TimeoutError if it has not by then)."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.job(job_id)
            if job["finished_at"] is not None:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} is still {job['status']} after {timeout_s} s")
            time.sleep(poll_s)


class JobReporter:
    """A running job's side: report evals and checkpoints with the job's own token."""

    def __init__(
        self,
        url: str,
        job_id: str,
        token: str,
        retry_s: float = RETRY_S,
        socket: str | None = None,
    ) -> None:
        self.job_id, self.retry_s = job_id, retry_s
        self.http = Http(url, token, 30.0, socket)

    @classmethod
    def from_env(cls) -> JobReporter | None:
        """The reporter of the job this process runs as, or None outside the platform."""
        env = os.environ
        if not {"RLGUARD_URL", "RLGUARD_JOB_ID", "RLGUARD_JOB_TOKEN"} <= env.keys():
            return None
        socket = env.get("RLGUARD_SOCKET")
        return cls(
            env["RLGUARD_URL"], env["RLGUARD_JOB_ID"], env["RLGUARD_JOB_TOKEN"], socket=socket
        )

    def _post(self, path: str, body: dict[str, Any], timeout: float | None = None) -> Any:
        """POST, retrying while the server is unreachable or restarting, or its artifact store
        is (5xx), and after the wait a 429 names (the job reports faster than its rate)."""
        deadline = time.monotonic() + self.retry_s
        delay = 0.2
        wait = {} if timeout is None else {"timeout": timeout}
        while True:
            pause = delay
            try:
                response = self.http.post(path, json=body, **wait)
                if response.status_code == 429:
                    pause = _retry_after(response, delay)
                    if time.monotonic() + pause > deadline:
                        _checked(response)  # the refusal itself: no time left to wait it out
                elif response.status_code < 500:
                    return _checked(response)
            except TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"the platform did not take {path} within {self.retry_s} s")
            time.sleep(pause)
            delay = min(delay * 2, 5.0)

    def eval(
        self,
        step: int,
        score: float,
        progress: float,
        loss: float | None = None,
        proxy: float | None = None,
        kl: float | None = None,
        checkpoint: str | None = None,
        metrics: dict[str, float] | None = None,
    ) -> dict[str, Any]:
        """Report one eval; the answer's `action` is "stop" when the job should stop now."""
        body = {
            "step": step,
            "score": score,
            "progress": progress,
            "loss": None if loss is None or math.isnan(loss) else loss,
            "proxy": proxy,
            "kl": kl,
            "checkpoint": checkpoint,
        }
        if metrics:
            body["metrics"] = {k: v for k, v in metrics.items() if math.isfinite(v)}
        wait = None if checkpoint is None else CHECKPOINT_WAIT_S
        return self._post(f"/v1/jobs/{self.job_id}/evals", body, wait)

    def checkpoint(self, step: int, path: str, metrics: dict[str, float] | None = None) -> None:
        body = {"step": step, "path": path, "metrics": metrics or {}}
        self._post(f"/v1/jobs/{self.job_id}/checkpoints", body, CHECKPOINT_WAIT_S)

    def step(self, step: int, **timings: float) -> dict[str, Any]:
        """One training step's timers and lengths, by verl's names with `_s` for `timing_s/`
        (`gen_s`, `old_log_prob_s`, `ref_s`, `update_actor_s`, `step_s`,
        `response_length_mean`, ...: runtime/data/verl_steps.csv's columns)."""
        return self._post(f"/v1/jobs/{self.job_id}/steps", {"step": step, **timings})

    def warning(self, code: str, message: str, data: dict[str, Any] | None = None) -> None:
        """A warning event on the job (a watcher's: a tag never seen, a NaN, ...)."""
        body = {"code": code, "message": message, "data": data or {}}
        self._post(f"/v1/jobs/{self.job_id}/warnings", body)

    def delivery(self, delivery: dict[str, Any]) -> None:
        """The checkpoint delivered for the best eval: a watcher's `Delivery`, as a dict."""
        self._post(f"/v1/jobs/{self.job_id}/delivery", delivery)


class PlatformRule(StopRule):
    """The platform as a stop rule: each observed eval is posted, the platform's answer obeyed.

    `best_dir`, when given, is where the job keeps the weights of its best eval so far (the CGPO
    trainer's `best/`, written before its eval hooks run): an eval that beats every earlier one
    is reported with that path as its checkpoint.
    """

    name = "platform"

    def __init__(
        self, reporter: JobReporter, kind: str = "rlhf", best_dir: str | None = None
    ) -> None:
        super().__init__((kind,))
        self.reporter, self.best_dir = reporter, best_dir
        self.best = -math.inf

    @classmethod
    def from_env(cls, best_dir: str | None = None) -> PlatformRule | None:
        reporter = JobReporter.from_env()
        if reporter is None:
            return None
        return cls(reporter, os.environ.get("RLGUARD_JOB_KIND", "rlhf"), best_dir)

    def observe(self, event: EvalEvent) -> Decision:
        checkpoint = None
        if self.best_dir is not None and event.score > self.best:
            self.best, checkpoint = event.score, self.best_dir
        answer = self.reporter.eval(
            event.step,
            event.score,
            event.progress,
            event.loss,
            event.proxy,
            None,
            checkpoint,
            event.metrics,
        )
        if answer["action"] == "stop":
            return Decision(True, answer["reason"] or "stopped by the platform")
        return CONTINUE

    def saved(self, step: int, path: os.PathLike[str] | str) -> None:
        """A trainer's save hook: its resumable checkpoint goes to the platform's store, from
        which a new attempt on any node resumes (the report returns once it is stored)."""
        self.reporter.checkpoint(step, str(path))

    def new_state(self) -> None:  # the platform holds the state
        return None

    def decide(self, state: None, event: EvalEvent) -> Decision:
        return CONTINUE
