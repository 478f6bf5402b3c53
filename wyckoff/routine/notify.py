"""Push channels: Feishu, WeCom and DingTalk group bots, Telegram, email over SMTP with TLS
and a generic signed webhook. Each gets its service's own message format, signature and
size limit; a long text is split at line ends into numbered parts sent in order. The URL
and the secret stay in environment variables: only their names are stored, and whatever
is shown or raised has their values masked.

Formats and signatures (docs/routine.md cites the pages): Feishu signs
base64(HMAC-SHA256(key=f"{seconds}\\n{secret}", message=b"")) into the body; DingTalk signs
base64(HMAC-SHA256(key=secret, message=f"{milliseconds}\\n{secret}")) into the query."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote_plus, urlsplit

from wyckoff import notify_store
from wyckoff.errors import UsageError, WyckoffError
from wyckoff.loopback import is_loopback

if TYPE_CHECKING:
    from wyckoff.store import Store

KINDS = ("feishu", "wecom", "dingtalk", "telegram", "email", "webhook")
# (unit, most per message): WeCom markdown 4,096 bytes, Telegram 4,096 characters; Feishu
# and DingTalk bodies stay under their 20 KB request limit
LIMITS = {
    "feishu": ("bytes", 18_000),
    "wecom": ("bytes", 4_096),
    "dingtalk": ("bytes", 18_000),
    "telegram": ("chars", 4_096),
    "webhook": ("bytes", 60_000),
}
DEADLINE_S = 20.0  # for a whole request: connect, send and the reply
MIN_TOKEN_CHARS = 8  # shorter URL parts ("robot", "send", "hook") are not secrets
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CHANNEL_NAME = re.compile(r"^[\w-]{1,32}$")


class NotifyError(WyckoffError):
    """A channel could not deliver; the message names the channel, never its URL or secret."""


@dataclass(frozen=True)
class Channel:
    name: str
    kind: str
    url_env: str
    secret_env: str | None = None

    def url(self) -> str:
        value = os.environ.get(self.url_env, "").strip()
        if not value:
            raise NotifyError(f"渠道 {self.name}：环境变量 {self.url_env} 没有设置，无法推送。")
        return value

    def secret(self) -> str | None:
        if not self.secret_env:
            return None
        value = os.environ.get(self.secret_env, "").strip()
        if not value:
            raise NotifyError(f"渠道 {self.name}：环境变量 {self.secret_env} 没有设置，无法签名。")
        return value

    def masked_url(self) -> str:
        """Where the channel points, without the token: scheme and host only."""
        value = os.environ.get(self.url_env, "").strip()
        if not value:
            return f"（{self.url_env} 未设置）"
        parts = urlsplit(value)
        return f"{parts.scheme}://{parts.hostname or ''}/***"


def url_problem(kind: str, url: str) -> str | None:
    """What is wrong with `url` as the address of a `kind` channel (a phrase), or None.
    Pushes go out over https only; plain http only to this machine (a local relay)."""
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    uses = f"用的是 {scheme} 协议" if scheme else "没有写协议"
    if kind == "email":
        if scheme in ("smtps", "smtp"):
            return None
        return f"{uses}：邮件渠道要写成 smtps://… 或 smtp://…"
    if scheme in ("https", "http") and not host:
        return "没有主机名"
    if scheme == "https":
        return None
    if scheme == "http" and is_loopback(host):
        return None
    if scheme == "http":
        return (
            f"是 http:// 明文地址：只有发往本机（127.0.0.1、localhost）时可用，{host} 要用 https://"
        )
    return f"{uses}：推送只接受 https:// 地址（本机中转可用 http://127.0.0.1）"


# --- channels in the db -------------------------------------------------------------------------


def add_channel(
    store: Store, name: str, kind: str, url_env: str, secret_env: str | None
) -> Channel:
    if not CHANNEL_NAME.match(name):
        raise UsageError(f"渠道名 {name} 无效：用 1–32 个字母、数字、下划线或短横线。")
    if kind not in KINDS:
        raise UsageError(f"没有渠道类型 {kind}：可用 {'、'.join(KINDS)}。")
    for option, value in (("--url-env", url_env), ("--secret-env", secret_env)):
        if value is not None and not ENV_NAME.match(value):
            raise UsageError(
                f"{option} 要的是环境变量的名字（如 FEISHU_WEBHOOK），不是地址或密钥本身。"
            )
    url = os.environ.get(url_env, "").strip()  # checked again at each push (set later, changed)
    problem = url_problem(kind, url) if url else None
    if problem:
        raise UsageError(f"没有添加渠道 {name}：{url_env} 里的地址{problem}。")
    with store.transaction():
        notify_store.write(store, name, kind, url_env, secret_env)
    return Channel(name, kind, url_env, secret_env)


def channels(store: Store) -> list[Channel]:
    return [Channel(**row) for row in notify_store.channels(store)]


def remove_channel(store: Store, name: str) -> None:
    with store.transaction():
        if not notify_store.delete(store, name):
            raise UsageError(f"没有名为 {name} 的推送渠道。用 `wyckoff notify list` 查看。")


def chosen(store: Store, target: str) -> list[Channel]:
    """The channels `target` names: one name, or `all`."""
    known = channels(store)
    if target == "all":
        if not known:
            raise UsageError(
                "还没有推送渠道：先用 `wyckoff notify add NAME --kind ... --url-env VAR` 添加。"
            )
        return known
    found = [c for c in known if c.name == target]
    if not found:
        names = f"已有：{'、'.join(c.name for c in known)}" if known else "还没有添加任何渠道"
        raise UsageError(f"没有名为 {target} 的推送渠道（{names}）。")
    return found


# --- sending ------------------------------------------------------------------------------------


def push(targets: list[Channel], title: str, text: str) -> list[dict[str, Any]]:
    """Send to every channel; one failing never stops the others. One result per channel."""
    results = []
    for channel in targets:
        try:
            parts = send(channel, title, text)
            results.append({"channel": channel.name, "ok": True, "parts": parts})
        except NotifyError as exc:
            results.append({"channel": channel.name, "ok": False, "error": exc.message})
        except Exception as exc:  # a bug must not hide the other channels' deliveries
            detail = mask(f"{type(exc).__name__}: {exc}", channel)
            results.append({"channel": channel.name, "ok": False, "error": detail})
    return results


def send(channel: Channel, title: str, text: str) -> int:
    """Deliver `text` through the channel; how many messages it took."""
    url, secret = channel.url(), channel.secret()
    problem = url_problem(channel.kind, url)  # a channel saved before the rule, or changed
    if problem:
        raise NotifyError(f"渠道 {channel.name}：{channel.url_env} 里的地址{problem}，没有推送。")
    if channel.kind == "email":
        from wyckoff.routine.mail import send_mail

        try:
            send_mail(url, secret, title, text)
        except Exception as exc:
            raise NotifyError(
                mask(f"渠道 {channel.name}：邮件发送失败（{exc}）", channel)
            ) from None
        return 1
    parts = split(text, *LIMITS[channel.kind])
    for part in parts:
        _post_part(channel, url, secret, title, part)
    return len(parts)


def _post_part(channel: Channel, url: str, secret: str | None, title: str, text: str) -> None:
    kind = channel.kind
    headers: dict[str, str] = {}
    if kind == "feishu":
        body: dict[str, Any] = {"msg_type": "text", "content": {"text": text}}
        if secret:
            stamp = str(int(time.time()))
            body.update(timestamp=stamp, sign=feishu_sign(stamp, secret))
    elif kind == "wecom":
        body = {"msgtype": "markdown", "markdown": {"content": text}}
    elif kind == "dingtalk":
        body = {"msgtype": "markdown", "markdown": {"title": title, "text": text}}
        if secret:
            stamp = str(int(time.time() * 1000))
            joiner = "&" if "?" in url else "?"
            url = f"{url}{joiner}timestamp={stamp}&sign={quote_plus(dingtalk_sign(stamp, secret))}"
    elif kind == "telegram":
        parts = urlsplit(url)
        chat = parse_qs(parts.query).get("chat_id", [""])[0]
        if not chat:
            raise NotifyError(f"渠道 {channel.name}：Telegram 地址要带 ?chat_id=聊天编号。")
        url = parts._replace(query="").geturl()
        body = {"chat_id": chat, "text": text}
    else:
        body = {"title": title, "text": text}
    payload = json.dumps(body, ensure_ascii=False).encode()
    if kind == "webhook" and secret:
        stamp = str(int(time.time()))
        headers["X-Wyckoff-Timestamp"] = stamp
        headers["X-Wyckoff-Signature"] = "sha256=" + webhook_sign(stamp, payload, secret)
    reply = _post(channel, url, payload, headers)
    _check_reply(channel, reply)


def _post(channel: Channel, url: str, payload: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """POST `payload` within DEADLINE_S in all; a redirect is refused, never followed (it
    could point anywhere: another host, this machine, a cloud metadata address)."""
    import http.client

    from wyckoff import net_deadline

    parts = urlsplit(url)
    connection_class = (
        net_deadline.DeadlineHTTPSConnection
        if parts.scheme == "https"
        else net_deadline.DeadlineHTTPConnection
    )
    named = f"渠道 {channel.name}（{channel.kind}）"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise NotifyError(f"{named}的地址端口无效：检查 {channel.url_env}。") from None
    connection = connection_class(parts.hostname or "", port, DEADLINE_S)
    try:
        with net_deadline.deadline(connection.watch, DEADLINE_S):
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            connection.request(
                "POST",
                target,
                body=payload,
                headers={"Content-Type": "application/json; charset=utf-8", **headers},
            )
            response = connection.getresponse()
            text = response.read(65_536).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as exc:
        if connection.watch.shut:
            raise _too_slow(named) from None
        raise NotifyError(mask(f"{named}连不上：{exc}。", channel)) from None
    finally:
        connection.close()
    if connection.watch.shut:  # the reply may have ended early because the deadline cut it
        raise _too_slow(named)
    if 300 <= response.status < 400:
        raise NotifyError(
            f"{named}的地址返回了重定向（HTTP {response.status}）：推送不跟随重定向，"
            f"请把 {channel.url_env} 改成服务给出的最终地址。"
        )
    if response.status >= 400:
        raise NotifyError(f"{named}拒绝了推送：HTTP {response.status}。")
    try:
        reply = json.loads(text) if text.strip() else {}
    except ValueError:
        reply = {}
    return reply if isinstance(reply, dict) else {}


def _too_slow(named: str) -> NotifyError:
    return NotifyError(f"{named}在 {DEADLINE_S:g} 秒内没有完成推送，已放弃：检查服务是否正常。")


def _check_reply(channel: Channel, reply: dict[str, Any]) -> None:
    """The services answer HTTP 200 with an error code in the body."""
    code = {
        "feishu": reply.get("code", reply.get("StatusCode", 0)),
        "wecom": reply.get("errcode", 0),
        "dingtalk": reply.get("errcode", 0),
        "telegram": 0 if reply.get("ok") else reply.get("error_code", "未知"),
    }.get(channel.kind, 0)
    if code not in (0, "0", None):
        said = reply.get("msg") or reply.get("errmsg") or reply.get("description") or ""
        raise NotifyError(
            mask(
                f"渠道 {channel.name}（{channel.kind}）拒绝了推送：{code} {str(said)[:200]}",
                channel,
            )
        )


def mask(text: str, channel: Channel) -> str:
    """`text` with the channel's URL and secret replaced by ***, and every part of the URL
    that could be a token (path segments, query values, the password) too: a service may
    echo just the key back in its error."""
    from urllib.parse import parse_qsl

    values = []
    for env in (channel.url_env, channel.secret_env):
        value = os.environ.get(env or "", "").strip()
        if value:
            parts = urlsplit(value)
            values += [value, parts.password or "", *parts.path.split("/")]
            values += [v for _, v in parse_qsl(parts.query)]
    for value in sorted((v for v in values if len(v) >= MIN_TOKEN_CHARS), key=len, reverse=True):
        text = text.replace(value, "***")
    return text


# --- signatures and splitting -----------------------------------------------------------------


def feishu_sign(timestamp: str, secret: str) -> str:
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def dingtalk_sign(timestamp: str, secret: str) -> str:
    message = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(secret.encode(), message, hashlib.sha256).digest()).decode()


def webhook_sign(timestamp: str, payload: bytes, secret: str) -> str:
    return hmac.new(
        secret.encode(), timestamp.encode() + b"." + payload, hashlib.sha256
    ).hexdigest()


def split(text: str, unit: str, limit: int) -> list[str]:
    """`text` in parts of at most `limit` bytes or characters, cut at line ends (a line longer
    than a part is cut inside), numbered （i/n） when there are several."""
    reserve = 16  # room for the （i/n） header

    def size(s: str) -> int:
        return len(s.encode()) if unit == "bytes" else len(s)

    if size(text) <= limit:
        return [text]
    budget, parts, current = limit - reserve, [], ""
    for line in _pieces(text, size, budget):
        if current and size(current) + size(line) > budget:
            parts.append(current)
            current = ""
        current += line
    parts.append(current)
    return [f"（{i}/{len(parts)}）\n{part.rstrip()}" for i, part in enumerate(parts, 1)]


def _pieces(text: str, size: Callable[[str], int], budget: int) -> list[str]:
    pieces = []
    for line in text.splitlines(keepends=True):
        while size(line) > budget:
            cut = budget
            while size(line[:cut]) > budget:
                cut -= max(1, (size(line[:cut]) - budget) // 3)
            pieces.append(line[:cut])
            line = line[cut:]
        pieces.append(line)
    return pieces
