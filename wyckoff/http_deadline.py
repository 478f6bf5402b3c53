"""HTTP with one deadline for the whole exchange: connect, send and every read.

http.client's timeout is per socket operation, which a server dripping one byte a second
renews forever. A watchdog timer shuts the connection's socket down at the deadline: that
wakes whatever read, write or TLS handshake is waiting, and it fails at once. Used by
web_fetch and by the push channels."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
from collections.abc import Iterator


class DeadlineHTTPConnection(http.client.HTTPConnection):
    """Connects to `address` (a checked IP; the host name by default) and can be ended from
    another thread by `shut_down`; `shut` says whether it was."""

    def __init__(self, host: str, port: int | None, timeout: float, address: str = "") -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address or host
        self.fd: int | None = None  # one descriptor from connect to close, TLS or not
        self.shut = False

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)
        self.fd = self.sock.fileno()
        if self.shut:  # the deadline passed while connecting
            raise TimeoutError("deadline passed")

    def shut_down(self) -> None:
        """Wakes any read, write or handshake waiting on the socket; it then fails at once."""
        self.shut = True
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            sock = socket.socket(fileno=self.fd)  # a view of the descriptor, not a copy
            try:
                sock.shutdown(socket.SHUT_RDWR)
            finally:
                sock.detach()  # the connection still owns and closes the descriptor


class DeadlineHTTPSConnection(DeadlineHTTPConnection):
    def connect(self) -> None:
        super().connect()
        context = ssl.create_default_context()  # the certificate must match the host name
        self.sock = context.wrap_socket(self.sock, server_hostname=self.host)


@contextlib.contextmanager
def deadline(connection: DeadlineHTTPConnection, seconds: float) -> Iterator[None]:
    """Shut `connection` down after `seconds` unless the block ended first; closed after."""
    watchdog = threading.Timer(seconds, connection.shut_down)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()
        connection.close()
