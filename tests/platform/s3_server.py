"""A real S3-protocol server for the storage tests: moto's server mode (`moto[server]` from PyPI),
started as a process on loopback, behind a TCP proxy the tests can take down and bring back (the
store going away mid-run without losing what it holds: moto keeps its objects in memory).

moto, because it is the S3 emulator the AWS SDKs' own users test with (boto3's, s3fs's and
aiobotocore's suites run against it), installs with pip alone (no Java, no container: MinIO and
LocalStack need a binary or Docker) and speaks the S3 REST protocol over HTTP to s3fs unchanged.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import httpx

from rlguard.ports import unused_port

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "rlguard-test",
    "AWS_SECRET_ACCESS_KEY": "rlguard-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


class Proxy:
    """Pipes TCP connections from its port to a target; `down()` drops every connection and
    refuses new ones (the store unreachable), `up()` takes them again."""

    def __init__(self, target_port: int) -> None:
        self.target, self.port = target_port, unused_port()
        self.listener: socket.socket | None = None
        self.open: list[socket.socket] = []
        self.up()

    def up(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def down(self) -> None:
        assert self.listener is not None
        self.listener.close()
        for s in self.open:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
                s.close()
        self.open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                inner, _ = listener.accept()
            except OSError:
                return
            outer = socket.create_connection(("127.0.0.1", self.target))
            self.open += [inner, outer]
            for a, b in ((inner, outer), (outer, inner)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(1 << 16):
            sink.sendall(data)
    for s in (source, sink):
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)


@dataclass
class S3Server:
    bucket: str = "rlguard"
    process: subprocess.Popen | None = None
    proxy: Proxy | None = None
    env: dict[str, str] = field(default_factory=dict)

    def start(self) -> S3Server:
        """Start moto; CI fails here rather than skip if it cannot."""
        port = unused_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.TransportError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto's S3 server did not start") from None
                time.sleep(0.2)
        self.proxy = Proxy(port)
        self.env = {**CREDENTIALS, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.proxy.port}"}
        with self.environment():
            import s3fs

            s3fs.S3FileSystem(endpoint_url=self.env["AWS_ENDPOINT_URL"]).mkdir(self.bucket)
        return self

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/platform"

    @contextlib.contextmanager
    def environment(self):  # type: ignore[no-untyped-def]
        """The store's credentials and endpoint in this process's environment, for a while."""
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def stop(self) -> None:
        if self.proxy is not None:
            with contextlib.suppress(OSError):
                self.proxy.down()
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
