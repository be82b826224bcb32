"""The API socket's forwarder against a real TCP server on loopback: requests pass both ways; a
job holding many connections open gets MAX_CONNECTIONS of them through, the rest dropped at
once, and its slots come back when its connections end."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from rlguard.platform.apiforward import MAX_CONNECTIONS, ApiForward


class Echo:
    """A TCP server that counts the connections it holds open and echoes what it reads."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.open, self.lock = 0, threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with self.lock:
            self.open += 1
        with conn:
            while data := conn.recv(4096):
                conn.sendall(data)
        with self.lock:
            self.open -= 1


@pytest.fixture
def forward(tmp_path):
    echo = Echo()
    forward = ApiForward(str(tmp_path / "api.sock"), echo.url)
    yield forward, echo
    forward.close()
    echo.listener.close()


def connect(path: str) -> socket.socket:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    client.connect(path)
    return client


def echoed(client: socket.socket) -> bool:
    try:
        client.sendall(b"ping")
        return client.recv(4) == b"ping"
    except OSError:
        return False


def wait_until(check, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return check()


def test_a_job_holding_many_connections_gets_its_share_and_no_more(forward):
    forward, echo = forward
    threads = threading.active_count()  # the worker's own: other tests may have left some
    held = [connect(forward.path) for _ in range(3 * MAX_CONNECTIONS)]
    answered = [echoed(c) for c in held]
    assert sum(answered) == MAX_CONNECTIONS
    assert echo.open == MAX_CONNECTIONS
    # two pumps a forwarded connection and the echo server's one, none for those refused
    assert threading.active_count() - threads <= 3 * MAX_CONNECTIONS
    for client in held:
        client.close()
    assert wait_until(lambda: echo.open == 0)
    fresh = [connect(forward.path) for _ in range(MAX_CONNECTIONS)]
    assert all(echoed(c) for c in fresh)  # the slots came back
    for client in fresh:
        client.close()
