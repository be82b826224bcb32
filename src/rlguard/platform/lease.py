"""The control lease: which of the servers sharing one PostgreSQL store leads.

Several `rlguard serve` processes may share a PostgreSQL store (two hosts behind a load balancer).
All of them answer the API; only the holder of the control lease schedules, launches, decides and
records runs, as Kubernetes' controllers elect a leader with a Lease object. The lease is one row
of the store: its holder, the URL the others forward requests to, its epoch (one more at every
change of holder) and when it expires by the database's clock, so the hosts' clocks never matter.
The holder renews it every RENEW_S; a standby takes it once it has expired.

Fencing: every transaction of the leader first takes a KEY SHARE lock on the row and checks the
epoch is still its own. A takeover changes the epoch, which is the row's key, so it waits for the
leader's transactions in flight and every later one sees the new epoch and is refused: a deposed
leader's late write is never applied (Kubernetes fences with resource versions the same way).
The leader's own clock stops it first: past TTL_S - MARGIN_S since its last renewal began it no
longer believes it leads, while the database keeps the lease at least TTL_S from then.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy import Engine, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from rlguard.platform.db import ControlLease

log = logging.getLogger(__name__)

TTL_S = 5.0
"""How long a renewal keeps the lease: a killed leader's standby takes over within about this."""

RENEW_S = 1.0
"""How often the leader renews, and a standby tries to take the lease."""

MARGIN_S = 0.5
"""How much sooner than the database the leader stops believing it leads (clock rate drift)."""

TAKEOVER_LOCK_TIMEOUT = "1s"
"""How long a takeover waits for the old leader's transactions in flight before it tries again.
A leader that froze inside one (a paused process, a host cut off) holds it until PostgreSQL ends
the session (`idle_in_transaction_session_timeout`, store.py)."""

_NOW = "extract(epoch from clock_timestamp())"


class Deposed(Exception):
    """This server's transaction was refused: another server holds the lease now."""


class Lease:
    """This server's side of the lease: take, renew, release, and fence its transactions.

    `on_lost` is called once, from whichever thread first sees that the lease is gone; the server
    exits there (as Kubernetes' controllers do), leaving the jobs to the new leader."""

    def __init__(
        self, engine: Engine, holder: str, url: str, on_lost: Callable[[str], None]
    ) -> None:
        self.engine, self.holder, self.url, self.on_lost = engine, holder, url, on_lost
        self.epoch: int | None = None
        self._believed_until = 0.0  # monotonic
        self._lost = threading.Event()

    def _statement(self, sql: str, **params: object) -> int | None:
        with self.engine.begin() as c:
            c.execute(text(f"SET LOCAL lock_timeout = '{TAKEOVER_LOCK_TIMEOUT}'"))
            result = c.execute(text(sql), {"ttl": TTL_S, **params})
            return result.scalar() if result.returns_rows else None

    def try_acquire(self) -> bool:
        """Take the lease if it has expired (or was released); whether this server now leads."""
        began = time.monotonic()
        try:
            epoch = self._statement(
                f"UPDATE control_lease SET epoch = epoch + 1, holder = :holder, url = :url,"
                f" expires_at = {_NOW} + :ttl, acquired_at = {_NOW}"
                f" WHERE expires_at < {_NOW} RETURNING epoch",
                holder=self.holder,
                url=self.url,
            )
        except DBAPIError as e:  # the store away, or the old leader's transaction in the way
            log.info("control lease not taken: %s", str(e).splitlines()[0])
            return False
        if epoch is None:
            return False
        self.epoch, self._believed_until = epoch, began + TTL_S - MARGIN_S
        return True

    def renew(self) -> None:
        """Extend the lease; `on_lost` once it is another's, or this server's belief ran out."""
        began = time.monotonic()
        try:
            renewed = self._statement(
                f"UPDATE control_lease SET expires_at = {_NOW} + :ttl"
                " WHERE epoch = :epoch AND holder = :holder RETURNING epoch",
                epoch=self.epoch,
                holder=self.holder,
            )
        except DBAPIError as e:  # the store away: the lease holds while it has not expired
            log.warning("control lease not renewed: %s", str(e).splitlines()[0])
            if not self.believed():
                self.lose(f"the store was not reached to renew the lease of epoch {self.epoch}")
            return
        took = time.monotonic() - began
        if took > RENEW_S:  # the host or the store is slow: the lease is at risk
            log.warning("control lease renewal took %.1f s (it holds %.0f s)", took, TTL_S)
        if renewed == self.epoch:
            self._believed_until = began + TTL_S - MARGIN_S
        else:
            self.lose(f"the lease of epoch {self.epoch} was not renewed in time")

    def release(self) -> None:
        """Let the lease go at once (a graceful stop): a standby need not wait for it to expire."""
        if self.epoch is None or self._lost.is_set():
            return
        self._lost.set()
        try:
            self._statement(
                "UPDATE control_lease SET expires_at = 0 WHERE epoch = :epoch AND holder = :holder",
                epoch=self.epoch,
                holder=self.holder,
            )
        except DBAPIError as e:
            log.warning("control lease not released (it expires instead): %s", e)

    def believed(self) -> bool:
        """Whether this server may still act as the leader, by its own clock."""
        return not self._lost.is_set() and time.monotonic() < self._believed_until

    def leader(self) -> tuple[int, str] | None:
        """The current leader's epoch and URL, None while the lease is expired."""
        with self.engine.connect() as c:
            row = c.execute(
                text(f"SELECT epoch, url FROM control_lease WHERE expires_at >= {_NOW}")
            ).first()
        return None if row is None else (row.epoch, row.url)

    def fence(self, session: Session) -> None:
        """First statement of each of the leader's transactions: Deposed unless it leads still."""
        if not self.believed():
            self.lose(f"the lease of epoch {self.epoch} ran out by this server's clock")
            raise Deposed(self.holder)
        query = select(ControlLease.epoch).with_for_update(read=True, key_share=True)
        epoch = session.execute(query).scalar_one()
        if epoch != self.epoch:
            self.lose(f"epoch {epoch} is another server's (this one held {self.epoch})")
            raise Deposed(self.holder)

    def lose(self, why: str) -> None:
        if not self._lost.is_set():
            self._lost.set()
            self.on_lost(why)


class LeaseKeeper(threading.Thread):
    """Takes the lease when it is free (`on_acquired` runs in a thread of its own, so the lease
    is renewed while the new leader recovers), then renews it every RENEW_S. While standing by
    it keeps `leader` current, where requests are forwarded."""

    def __init__(self, lease: Lease, on_acquired: Callable[[], None]) -> None:
        super().__init__(name="rlguard-lease", daemon=True)
        self.lease, self.on_acquired = lease, on_acquired
        self.leader: tuple[int, str] | None = None
        self._stopped = threading.Event()

    def stop(self) -> None:
        self._stopped.set()

    def run(self) -> None:
        while not self._stopped.is_set():
            began = time.monotonic()
            if self.lease.epoch is not None:
                self.lease.renew()
            elif self.lease.try_acquire():
                log.info("took the control lease (epoch %s)", self.lease.epoch)
                threading.Thread(target=self.on_acquired, name="rlguard-takeover").start()
            else:
                self._look()
            self._stopped.wait(max(RENEW_S - (time.monotonic() - began), 0.05))

    def _look(self) -> None:
        try:
            self.leader = self.lease.leader()
        except DBAPIError:
            self.leader = None
