"""Who may hold a connection to `wyckoff web`, and for how long: uvicorn's h11 protocol with
deadlines and caps, so that a client sending half a request cannot stall the reading room.

Until its first request's headers are complete a connection is anonymous (the token is a
cookie in those headers): such a *pending* connection gets HEADER_DEADLINE seconds, and a
client address holds at most PENDING_PER_CLIENT of them. Loopback clients all share 127.0.0.1,
the user's own browser included, so a newcomer over the cap replaces the client's oldest
pending connection instead of being refused: a stalling attacker cannot crowd out the user,
whose headers arrive at once. Once the headers are in, the Guard answers (a request without a
valid cookie gets its 401 with `Connection: close`), and a body must arrive within
BODY_DEADLINE. MAX_CONNECTIONS bounds all connections, and the accept batch bounds how many
sockets the server opens before these rules run: 1,100 half-sent requests keep well inside the
common limit of 1,024 open files."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_DEADLINE = 10.0
BODY_DEADLINE = 30.0
PENDING_PER_CLIENT = 100
MAX_CONNECTIONS = 250
ACCEPT_BATCH = 100  # uvicorn's backlog: asyncio accepts at most this many sockets per loop turn
DEADLINE_VARIABLE = "WYCKOFF_TEST_WEB_DEADLINE"  # seconds for both deadlines; tests only


@dataclass
class Gate:
    """One server's connections: all of them, and the pending ones, oldest first."""

    header_deadline: float = HEADER_DEADLINE
    body_deadline: float = BODY_DEADLINE
    open: set[GuardedProtocol] = field(default_factory=set)
    pending: dict[GuardedProtocol, None] = field(default_factory=dict)  # an ordered set

    @classmethod
    def from_environ(cls) -> Gate:
        value = os.environ.get(DEADLINE_VARIABLE)
        return cls() if value is None else cls(float(value), float(value))

    def admit(self, newcomer: GuardedProtocol) -> bool:
        """Makes room for `newcomer` by closing pending connections over the caps; False when
        every slot is held by a connection past its headers (then the newcomer is closed)."""
        own = [conn for conn in self.pending if conn.peer == newcomer.peer]
        if len(own) >= PENDING_PER_CLIENT:
            own[0].drop()
        if len(self.open) >= MAX_CONNECTIONS and self.pending:
            next(iter(self.pending)).drop()
        if len(self.open) >= MAX_CONNECTIONS:
            return False
        self.open.add(newcomer)
        self.pending[newcomer] = None
        return True

    def forget(self, conn: GuardedProtocol) -> None:
        self.open.discard(conn)
        self.pending.pop(conn, None)


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol, following each request's phase (headers, body, answered) by
    h11's view of the client, with a deadline on the first two."""

    gate: Gate  # set for each server by bound_to()

    @classmethod
    def bound_to(cls, gate: Gate) -> type[GuardedProtocol]:
        return type(cls.__name__, (cls,), {"gate": gate})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.peer = self.client[0] if self.client else ""
        self.phase: object = None
        self.deadline: asyncio.TimerHandle | None = None
        if not self.gate.admit(self):
            self.transport.close()
            return
        self.follow_request()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self.follow_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.follow_request()  # a kept-alive connection waits for the next request's headers

    def connection_lost(self, exc: Exception | None) -> None:
        self.set_deadline(None)
        self.gate.forget(self)
        super().connection_lost(exc)

    def follow_request(self) -> None:
        if self.transport.is_closing():
            return
        phase = self.conn.their_state
        if phase is not h11.IDLE:
            self.gate.pending.pop(self, None)  # headers complete: the Guard has judged them
        if phase is self.phase:
            return
        self.phase = phase
        if phase is h11.IDLE:
            self.set_deadline(self.gate.header_deadline)
        elif phase is h11.SEND_BODY:
            self.set_deadline(self.gate.body_deadline)
        else:
            self.set_deadline(None)

    def set_deadline(self, seconds: float | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        self.deadline = None if seconds is None else self.loop.call_later(seconds, self.drop)

    def drop(self) -> None:
        """Closes this connection now (a deadline passed, or a newcomer needs its slot)."""
        self.set_deadline(None)
        self.gate.forget(self)
        self.transport.close()


def server_options(gate: Gate) -> dict[str, Any]:
    """uvicorn.Config's arguments for the guarded protocol: h11 whatever else is installed,
    no WebSocket upgrade (none is served, and an upgrade would leave these rules)."""
    return {"http": GuardedProtocol.bound_to(gate), "ws": "none", "backlog": ACCEPT_BATCH}
