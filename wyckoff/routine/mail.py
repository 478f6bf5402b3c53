"""Email over SMTP, always encrypted: `smtps://user@host:465?to=a@x.cn,b@y.cn[&from=...]`
(TLS from the start) or `smtp://user@host:587?to=...` (STARTTLS, refused when the server does
not offer it). The password is the channel's secret, from its environment variable."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit

TIMEOUT_S = 20


class MailError(Exception):
    pass


def send_mail(url: str, password: str | None, subject: str, text: str) -> None:
    import smtplib
    import ssl
    from email.message import EmailMessage

    parts = urlsplit(url)
    query = parse_qs(parts.query)
    recipients = [a.strip() for a in ",".join(query.get("to", [])).split(",") if a.strip()]
    user = unquote(parts.username or "")
    sender = query.get("from", [user])[0]
    if parts.scheme not in ("smtps", "smtp") or not parts.hostname or not recipients:
        raise MailError(
            "邮件地址要写成 smtps://用户@主机:465?to=收件人（或 smtp://…:587 走 STARTTLS）"
        )
    context = ssl.create_default_context()
    server: smtplib.SMTP
    if parts.scheme == "smtps":
        server = smtplib.SMTP_SSL(
            parts.hostname, parts.port or 465, timeout=TIMEOUT_S, context=context
        )
    else:
        server = smtplib.SMTP(parts.hostname, parts.port or 587, timeout=TIMEOUT_S)
    with server:
        if parts.scheme == "smtp":
            server.ehlo()
            if not server.has_extn("starttls"):
                raise MailError("邮件服务器不支持 STARTTLS，拒绝明文发送")
            server.starttls(context=context)
            server.ehlo()
        if user and password:
            server.login(user, password)
        message = EmailMessage()
        message["Subject"], message["From"], message["To"] = subject, sender, ", ".join(recipients)
        message.set_content(text)
        server.send_message(message)
