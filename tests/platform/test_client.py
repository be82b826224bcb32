"""The platform's HTTP client (standard library only) against a small stand-in server, over TCP
and over a unix socket: its requests (bearer, JSON, query, quoted paths), refusals as
PlatformError, a streamed event feed and download, a reporter's retries (a 429 waited out as its
Retry-After says, a 413 never retried), and an unreachable platform as TransportError. The real
API is exercised by the live tests (test_e2e_commands.py)."""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import socketserver
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from rlguard.platform.client import (
    Client,
    JobReporter,
    PlatformError,
    TransportError,
)

BLOB = os.urandom(3 << 20)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    busy: list[int]  # statuses POST /evals is answered first (popped from the end)

    def log_message(self, *args) -> None:  # quiet
        pass

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "1")
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj) -> None:
        self._answer(status, json.dumps(obj).encode(), "application/json")

    def _request(self) -> dict:
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b""
        url = urlsplit(self.path)
        return {
            "method": self.command,
            "path": unquote(url.path),
            "raw_path": url.path,
            "query": {k: v[0] for k, v in parse_qs(url.query).items()},
            "auth": self.headers.get("Authorization"),
            "type": self.headers.get("Content-Type"),
            "body": raw.decode(),
        }

    def do_GET(self) -> None:
        request = self._request()
        path = request["path"]
        if path == "/v1/jobs/missing":
            error = {"message": "no such job", "code": "not_found", "param": "job_id"}
            self._json(404, {"error": error})
        elif path == "/v1/jobs/gateway":
            self._answer(502, b"<html>bad gateway</html>", "text/html")
        elif path == "/v1/jobs/j/logs":
            self._answer(200, b"a log line\n", "text/plain; charset=utf-8")
        elif path == "/v1/jobs/j/events" and request["query"].get("stream") == "true":
            self._stream(int(request["query"]["after"]))
        elif path.startswith("/files/"):
            self._answer(200, BLOB, "application/octet-stream")
        else:
            self._json(200, request)

    def _stream(self, after: int) -> None:
        """Server-sent events as sse-starlette sends them (CRLF), chunked, then the end."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for seq in range(after + 1, after + 4):
            event = f"id: {seq}\r\nevent: eval\r\ndata: {json.dumps({'seq': seq})}\r\n\r\n"
            data = event.encode() + b": ping\r\n\r\n"
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def do_POST(self) -> None:
        request = self._request()
        if request["path"].endswith("/evals") and self.busy:
            status = self.busy.pop()
            self._json(status, {"error": {"message": f"refused {status}", "code": str(status)}})
        elif request["path"].endswith("/evals"):
            self._json(200, {"action": "continue", "reason": None, "got": request})
        else:
            self._json(200, request)

    do_DELETE = do_GET


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self):  # BaseHTTPRequestHandler wants a (host, port) client address
        request, _ = super().get_request()
        return request, ("local", 0)


@pytest.fixture(params=["tcp", "unix"])
def server(request, tmp_path) -> Iterator[tuple[str, str | None, list[int]]]:
    """(url, socket, busy) of a stand-in server."""
    busy: list[int] = []
    handler = type("H", (Handler,), {"busy": busy})
    if request.param == "tcp":
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        where = (f"http://127.0.0.1:{httpd.server_address[1]}", None)
    else:
        path = str(tmp_path / "api.sock")
        httpd = UnixServer(path, handler)
        where = ("http://platform", path)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield (*where, busy)
    httpd.shutdown()
    httpd.server_close()


def test_requests_carry_the_key_json_and_quoted_paths(server):
    url, sock, _ = server
    client = Client(url, "rlg-key", socket=sock)
    listed = client.jobs(5, after="job x")
    assert listed["auth"] == "Bearer rlg-key"
    assert listed["path"] == "/v1/jobs" and listed["query"] == {"limit": "5", "after": "job x"}
    submitted = client.submit({"command": "écho", "gpus": 1})
    assert submitted["type"] == "application/json"
    assert json.loads(submitted["body"]) == {"command": "écho", "gpus": 1}
    job = client.job("a b%20c?d")  # a space and a `?` are quoted, an escape kept as it is
    assert job["raw_path"] == "/v1/jobs/a%20b%20c%3Fd" and job["path"] == "/v1/jobs/a b c?d"
    cancelled = client.cancel("j")
    assert (cancelled["method"], cancelled["body"]) == ("POST", "")
    assert client.delete("j")["method"] == "DELETE"
    assert client.http.get("/v1/jobs/j/logs").text == "a log line\n"
    with pytest.raises(ValueError, match="not JSON compliant"):  # as httpx: NaN is refused
        client.submit({"estimate_s": math.nan})


def test_refusals_are_platform_errors(server):
    url, sock, _ = server
    client = Client(url, "k", socket=sock)
    with pytest.raises(PlatformError) as refused:
        client.job("missing")
    error = refused.value
    assert (error.status, str(error), error.code, error.param) == (
        404,
        "no such job",
        "not_found",
        "job_id",
    )
    with pytest.raises(PlatformError) as not_json:
        client.job("gateway")
    assert (not_json.value.status, str(not_json.value)) == (502, "<html>bad gateway</html>")


def test_the_event_feed_and_a_download_stream(server):
    url, sock, _ = server
    client = Client(url, "k", socket=sock)
    assert list(client.follow("j", after=4)) == [{"seq": 5}, {"seq": 6}, {"seq": 7}]
    sink = io.BytesIO()
    assert client.download("/files/weights 1.bin", sink) == hashlib.sha256(BLOB).hexdigest()
    assert sink.getvalue() == BLOB


def test_a_reporter_retries_until_the_platform_takes_it(server):
    url, sock, busy = server
    busy.extend([503, 503])
    reporter = JobReporter(url, "j", "job-token", retry_s=30, socket=sock)
    answer = reporter.eval(3, 0.5, 0.25, loss=math.nan)
    assert answer["action"] == "continue" and not busy
    assert answer["got"]["auth"] == "Bearer job-token"
    assert json.loads(answer["got"]["body"])["loss"] is None


def test_a_reporter_waits_out_a_429_and_never_retries_a_413(server):
    url, sock, busy = server
    reporter = JobReporter(url, "j", "job-token", retry_s=30, socket=sock)
    busy.append(429)  # the job reports faster than its rate: Retry-After 1
    started = time.monotonic()
    assert reporter.eval(1, 0.5, 0.1)["action"] == "continue" and not busy
    assert time.monotonic() - started >= 1.0
    busy.extend([503, 413])  # over the job's allowance: refused at once, no second try
    with pytest.raises(PlatformError) as refused:
        reporter.eval(2, 0.5, 0.1)
    assert (refused.value.status, busy) == (413, [503])
    busy[:] = [429]  # a wait past the reporter's deadline: the refusal itself
    with pytest.raises(PlatformError) as limited:
        JobReporter(url, "j", "t", retry_s=0.5, socket=sock).eval(3, 0.5, 0.1)
    assert limited.value.status == 429 and time.monotonic() - started < 2.5


def test_an_unreachable_platform_is_a_transport_error(tmp_path):
    with pytest.raises(TransportError, match="Connection refused"):
        Client("http://127.0.0.1:9", "k").jobs()
    with pytest.raises(TransportError, match="No such file"):
        Client("http://platform", "k", socket=str(tmp_path / "none.sock")).jobs()
    with pytest.raises(TimeoutError, match="did not take"):
        JobReporter("http://127.0.0.1:9", "j", "t", retry_s=0.3).step(1, step_s=1.0)


def test_a_url_that_is_not_http_is_refused_at_once():
    with pytest.raises(ValueError, match="http"):
        Client("127.0.0.1:8321", "k")
