"""The control lease on a real PostgreSQL (lease.py): one server leads at a time, a takeover
waits for the leader's transaction in flight, and a deposed leader's late write is refused."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import func, select, text

from rlguard.platform import lease as lease_module
from rlguard.platform.db import Tenant
from rlguard.platform.lease import Deposed, Lease
from rlguard.platform.store import Store


class Server:
    """A server's store and lease, as `rlguard serve` holds them, and why it lost the lease."""

    def __init__(self, url: str, name: str) -> None:
        self.store = Store(url)
        self.lost: list[str] = []
        self.lease = Lease(self.store.engine, name, f"http://{name}", self.lost.append)

    def lead(self) -> bool:
        if not self.lease.try_acquire():
            return False
        self.store.fence = self.lease.fence
        return True

    def add_tenant(self, name: str) -> None:
        with self.store.transaction() as s:
            s.add(Tenant(id=name, name=name, quota_gpus=1, weight=1.0, created_at=time.time()))


@pytest.fixture
def servers(fresh_postgres_db):
    made = [Server(fresh_postgres_db, name) for name in ("a", "b")]
    yield made
    for server in made:
        server.store.close()


def _tenants(server: Server) -> int:
    with server.store.engine.connect() as c:
        return c.execute(select(func.count()).select_from(Tenant)).scalar_one()


def _expire(server: Server) -> None:
    """The lease runs out in the database's eyes while its holder still believes it leads: a
    host cut off from the store, or a process paused past the lease."""
    with server.store.engine.begin() as c:
        c.execute(text("UPDATE control_lease SET expires_at = 0"))


def test_one_leader_and_a_deposed_leaders_write_is_refused(servers):
    a, b = servers
    assert a.lead() and a.lease.epoch == 1
    assert not b.lead()  # the lease is a's until it expires
    assert b.lease.leader() == (1, "http://a")
    a.add_tenant("first")
    a.lease.renew()
    assert a.lost == []

    _expire(a)
    assert b.lead() and b.lease.epoch == 2
    assert b.lease.leader() == (2, "http://b")
    with pytest.raises(Deposed):
        a.add_tenant("late")
    assert a.lost == ["epoch 2 is another server's (this one held 1)"]
    assert _tenants(a) == 1  # the late write was refused, not applied
    b.add_tenant("second")
    assert _tenants(b) == 2


def test_a_renewal_after_a_takeover_loses_the_lease(servers):
    a, b = servers
    assert a.lead()
    _expire(a)
    assert b.lead()
    a.lease.renew()
    assert a.lost == ["the lease of epoch 1 was not renewed in time"]
    assert not a.lease.believed()


def test_a_takeover_waits_for_the_leaders_transaction_in_flight(servers):
    a, b = servers
    assert a.lead()
    in_flight = a.store.transaction()
    session = in_flight.__enter__()  # fenced: it holds the lease's row in KEY SHARE mode
    session.add(Tenant(id="t", name="t", quota_gpus=1, weight=1.0, created_at=time.time()))
    _expire(b)
    began = time.monotonic()
    assert not b.lead()  # it waited for a's transaction, and gave up after its lock timeout
    assert time.monotonic() - began >= 0.9
    in_flight.__exit__(None, None, None)  # committed under epoch 1: before the takeover
    assert _tenants(a) == 1
    assert b.lead() and b.lease.epoch == 2
    with pytest.raises(Deposed):
        a.add_tenant("late")
    assert _tenants(b) == 1


def test_a_leaders_own_clock_stops_it_before_the_store_does(servers, monkeypatch):
    monkeypatch.setattr(lease_module, "TTL_S", 1.0)
    a, b = servers
    assert a.lead()
    assert not b.lead()
    time.sleep(1.0 - lease_module.MARGIN_S + 0.1)  # not renewed: past its own belief
    assert not a.lease.believed()
    with pytest.raises(Deposed):
        a.add_tenant("late")
    assert a.lost == ["the lease of epoch 1 ran out by this server's clock"]
    assert _tenants(a) == 0
    time.sleep(lease_module.MARGIN_S)
    assert b.lead()  # the store's lease ran out after a stopped believing in it


def test_a_released_lease_is_taken_at_once(servers):
    a, b = servers
    assert a.lead()
    a.lease.release()
    assert b.lead() and b.lease.epoch == 2
    assert a.lost == []  # a graceful release is not a loss
