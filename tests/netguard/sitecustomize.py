"""Loopback-only networking for tests, also loaded into CLI subprocesses via PYTHONPATH.

Any connection or name lookup beyond 127.0.0.0/8 and ::1 fails at once with NetworkBlocked.
"""

from __future__ import annotations

import ipaddress
import socket


class NetworkBlocked(OSError):
    pass


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def install(setattr_=setattr) -> None:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(sock: socket.socket, address) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(str(address[0])):
            raise NetworkBlocked(f"tests may not connect to {address!r}")

    def connect(sock, address):
        check(sock, address)
        return real_connect(sock, address)

    def connect_ex(sock, address):
        check(sock, address)
        return real_connect_ex(sock, address)

    def getaddrinfo(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and not is_loopback(str(name)):
            raise NetworkBlocked(f"tests may not resolve {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    setattr_(socket.socket, "connect", connect)
    setattr_(socket.socket, "connect_ex", connect_ex)
    setattr_(socket, "getaddrinfo", getaddrinfo)


if __name__ == "sitecustomize":  # loaded by a CLI subprocess started from a test
    install()
