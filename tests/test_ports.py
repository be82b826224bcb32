"""A server's port is drawn where no outgoing connection takes one, and is free when drawn."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from rlguard import ports


def test_the_range_lies_below_the_kernels_ephemeral_ports():
    """Outgoing connections take their local ports from the ephemeral range (Ray's many among
    them): a port drawn there can be gone by the time the server binds it."""
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    if not ephemeral.is_file():
        pytest.skip("no Linux ephemeral port range on this host")
    low, _ = map(int, ephemeral.read_text().split())
    assert low > ports.HIGH
    assert ports.LOW > 19999  # above Ray's default worker ports (10002-19999)
    assert ports.LOW <= ports.unused_port() <= ports.HIGH


def test_a_port_something_listens_on_is_passed_over(monkeypatch):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        monkeypatch.setattr(ports.random, "sample", lambda _range, _k: [taken, free])
        assert ports.unused_port() == free


def test_no_free_port_is_an_error_that_says_where_it_looked(monkeypatch):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        monkeypatch.setattr(ports.random, "sample", lambda _range, _k: [taken])
        with pytest.raises(RuntimeError, match=r"no free port among 200 tried in 20000-32767"):
            ports.unused_port()
