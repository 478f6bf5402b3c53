"""Loopback stand-ins for the push services: an HTTP server that records each request and
answers like the service (or refuses, or redirects), one that answers a byte a second, and
a small SMTP server with STARTTLS and AUTH PLAIN."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit


@dataclass
class Received:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class PushServer:
    reply: dict = field(default_factory=lambda: {"errcode": 0, "code": 0, "ok": True})
    status: int = 200
    location: str | None = None  # sent as the Location header (a redirect)
    received: list[Received] = field(default_factory=list)

    def __enter__(self) -> PushServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                owner.received.append(Received(parts.path, query, dict(self.headers), body))
                payload = json.dumps(owner.reply).encode()
                self.send_response(owner.status)
                if owner.location:
                    self.send_header("Location", owner.location)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_PUT = do_POST  # a followed redirect may come as any of them

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, path: str = "/hook/TOKEN-abc123") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"


class DripServer:
    """Answers a byte a second (`answer`, about 40 s in all) after reading the request, or at
    once for a protocol where the server speaks first (SMTP): each byte renews a per-read
    timeout, so only a deadline for the whole exchange ends the wait."""

    HTTP = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"  # 40 bytes
    SMTP = b"220 localhost ESMTP, one byte a second\r\n"

    def __init__(self, answer: bytes = HTTP, speaks_first: bool = False) -> None:
        self.answer, self.speaks_first = answer, speaks_first
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook/TOKEN-abc123"

    def _serve(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn:
            if not self.speaks_first:
                conn.recv(65_536)
            for byte in self.answer:
                if self.stopped.wait(1.0):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:  # the client gave up
                    return

    def __enter__(self) -> DripServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.listener.close()


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for localhost and its key (openssl), to serve TLS the client can verify."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class SmtpServer:
    """Just enough SMTP: EHLO, STARTTLS, AUTH PLAIN, MAIL, RCPT, DATA, QUIT. Records the
    login and the messages; refuses MAIL before TLS."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert, key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.logins: list[tuple[str, str]] = []
        self.messages: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        stream = conn.makefile("rwb")
        tls = False

        def say(line: str) -> None:
            stream.write(line.encode() + b"\r\n")
            stream.flush()

        say("220 localhost ready")
        while line := stream.readline():
            command = line.decode().strip()
            verb = command.split(" ")[0].upper()
            if verb == "EHLO":
                say("250-localhost")
                say("250-AUTH PLAIN" if tls else "250-STARTTLS")
                say("250 8BITMIME")
            elif verb == "STARTTLS":
                say("220 go ahead")
                conn = self.context.wrap_socket(conn, server_side=True)
                stream, tls = conn.makefile("rwb"), True
            elif verb == "AUTH":
                _, user, password = base64.b64decode(command.split(" ")[2]).decode().split("\0")
                self.logins.append((user, password))
                say("235 ok")
            elif verb in ("MAIL", "RCPT"):
                say("250 ok" if tls else "530 must issue STARTTLS first")
            elif verb == "DATA":
                say("354 go on")
                lines = []
                while (data := stream.readline()) not in (b".\r\n", b""):
                    lines.append(data.decode())
                self.messages.append("".join(lines))
                say("250 queued")
            elif verb == "QUIT":
                say("221 bye")
                break
            else:
                say("250 ok")
        conn.close()

    def close(self) -> None:
        self.listener.close()
