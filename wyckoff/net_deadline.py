"""Network exchanges with one deadline for the whole of them: connect, send, every read.

The timeouts of http.client and smtplib are per socket operation, which a server dripping
one byte a second renews forever. A watchdog timer shuts the socket down at the deadline:
that wakes whatever read, write or TLS handshake is waiting, and it fails at once. Used by
web_fetch and by the push channels (webhooks and mail)."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
from collections.abc import Iterator


class SocketWatch:
    """The socket of one exchange, for the watchdog to shut down; `shut` says it did."""

    def __init__(self) -> None:
        self.fd: int | None = None  # one descriptor from connect to close, TLS or not
        self.shut = False

    def opened(self, sock: socket.socket) -> None:
        """Call with the connected socket, before any TLS handshake on it."""
        self.fd = sock.fileno()
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
                sock.detach()  # its owner still closes the descriptor


@contextlib.contextmanager
def deadline(watch: SocketWatch, seconds: float) -> Iterator[None]:
    """Shut `watch`'s socket down after `seconds` unless the block ended first."""
    watchdog = threading.Timer(seconds, watch.shut_down)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()


class DeadlineHTTPConnection(http.client.HTTPConnection):
    """Connects to `address` (a checked IP; the host name by default), watched."""

    def __init__(self, host: str, port: int | None, timeout: float, address: str = "") -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address or host
        self.watch = SocketWatch()

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)
        self.watch.opened(self.sock)


class DeadlineHTTPSConnection(DeadlineHTTPConnection):
    def connect(self) -> None:
        super().connect()
        context = ssl.create_default_context()  # the certificate must match the host name
        self.sock = context.wrap_socket(self.sock, server_hostname=self.host)
