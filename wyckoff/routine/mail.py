"""Email over SMTP, always encrypted: `smtps://user@host:465?to=a@x.cn,b@y.cn[&from=...]`
(TLS from the start) or `smtp://user@host:587?to=...` (STARTTLS, refused when the server does
not offer it). The password is the channel's secret, from its environment variable. The
whole exchange has one deadline (a server dripping its replies cannot stall a push)."""

from __future__ import annotations

import smtplib
import socket
import ssl
from email.message import EmailMessage
from urllib.parse import parse_qs, unquote, urlsplit

from wyckoff.net_deadline import SocketWatch, deadline

DEADLINE_S = 20.0  # connect, TLS, login and sending, all together


class MailError(Exception):
    pass


class _Watched(smtplib.SMTP):
    """Hands the connected socket, before any TLS, to the deadline's watchdog."""

    watch: SocketWatch

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        # smtplib's one place that opens the connection (absent from its type stubs)
        sock: socket.socket = super()._get_socket(host, port, timeout)  # type: ignore[misc]
        self.watch.opened(sock)
        return sock


class _WatchedSMTP(_Watched):
    def __init__(self, watch: SocketWatch, host: str, port: int) -> None:
        self.watch = watch
        super().__init__(host, port, timeout=DEADLINE_S)


class _WatchedSMTPS(smtplib.SMTP_SSL, _Watched):  # SMTP_SSL wraps what _Watched saw
    def __init__(self, watch: SocketWatch, host: str, port: int, context: ssl.SSLContext) -> None:
        self.watch = watch
        super().__init__(host, port, timeout=DEADLINE_S, context=context)


def send_mail(url: str, password: str | None, subject: str, text: str) -> None:
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    recipients = [a.strip() for a in ",".join(query.get("to", [])).split(",") if a.strip()]
    user = unquote(parts.username or "")
    sender = query.get("from", [user])[0]
    if parts.scheme not in ("smtps", "smtp") or not parts.hostname or not recipients:
        raise MailError(
            "邮件地址要写成 smtps://用户@主机:465?to=收件人（或 smtp://…:587 走 STARTTLS）"
        )
    message = EmailMessage()
    message["Subject"], message["From"], message["To"] = subject, sender, ", ".join(recipients)
    message.set_content(text)
    context = ssl.create_default_context()
    watch = SocketWatch()
    server: smtplib.SMTP
    try:
        with deadline(watch, DEADLINE_S):
            if parts.scheme == "smtps":
                server = _WatchedSMTPS(watch, parts.hostname, parts.port or 465, context)
            else:
                server = _WatchedSMTP(watch, parts.hostname, parts.port or 587)
            with server:
                if parts.scheme == "smtp":
                    server.ehlo()
                    if not server.has_extn("starttls"):
                        raise MailError("邮件服务器不支持 STARTTLS，拒绝明文发送")
                    server.starttls(context=context)
                    server.ehlo()
                if user and password:
                    server.login(user, password)
                server.send_message(message)
    except (OSError, smtplib.SMTPException):
        if watch.shut:
            raise MailError(f"邮件服务器在 {DEADLINE_S:g} 秒内没有完成发送，已放弃") from None
        raise
