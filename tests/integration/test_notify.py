"""Push channels against loopback stand-ins of the services: each service's format and
signature (verified the way the service verifies it), splitting within the limits, one
failing channel not stopping the others, and no URL token or secret in anything shown."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import time

import pytest

from tests.cli_runner import cli
from tests.integration.test_brief import hold
from tests.integration.test_portfolio_check import demo_codes
from tests.push_servers import DripServer, PushServer, SmtpServer, self_signed_certificate
from wyckoff.routine.notify import split

SECRET = "SECsecret-value-0123456789"
TOKEN_PATH = "/hook/TOKEN-abc123"


def channel(name: str, kind: str, url: str, secret: bool = False) -> dict[str, str]:
    """Add a channel whose URL (and secret) live in environment variables; their values."""
    env = {f"{name.upper()}_URL": url}
    args = ["notify", "add", name, "--kind", kind, "--url-env", f"{name.upper()}_URL"]
    if secret:
        env[f"{name.upper()}_SECRET"] = SECRET
        args += ["--secret-env", f"{name.upper()}_SECRET"]
    assert cli(*args).returncode == 0
    return env


def no_secret_in(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text and "TOKEN-abc123" not in text


def test_feishu_and_dingtalk_messages_carry_signatures_their_services_accept(home):
    with PushServer(reply={"code": 0}) as feishu, PushServer(reply={"errcode": 0}) as ding:
        env = channel("fs", "feishu", feishu.url(), secret=True)
        env |= channel("dd", "dingtalk", ding.url("/robot/send?access_token=TOKEN-abc123"), True)
        sent = cli("notify", "test", env=env)
    assert sent.returncode == 0, sent.stderr
    (fs,) = feishu.received
    body = fs.json
    key = f"{body['timestamp']}\n{SECRET}".encode()
    assert body["sign"] == base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
    assert body["msg_type"] == "text" and "测试消息" in body["content"]["text"]
    (dd,) = ding.received
    message = f"{dd.query['timestamp']}\n{SECRET}".encode()
    expected = base64.b64encode(hmac.new(SECRET.encode(), message, hashlib.sha256).digest())
    assert dd.query["sign"] == expected.decode() and dd.query["access_token"] == "TOKEN-abc123"
    assert dd.json["msgtype"] == "markdown" and "测试消息" in dd.json["markdown"]["text"]
    no_secret_in(fs.body.decode(), dd.body.decode(), sent.stdout, sent.stderr)


def test_a_long_brief_reaches_wecom_in_order_in_parts_within_4096_bytes(demo_home):
    hold(demo_codes(demo_home, 40))
    with PushServer(reply={"errcode": 0, "errmsg": "ok"}) as wecom:
        env = channel("wx", "wecom", wecom.url())
        pushed = cli("brief", "--push", "wx", env=env)
    assert pushed.returncode == 0, pushed.stderr
    parts = [r.json["markdown"]["content"] for r in wecom.received]
    assert len(parts) > 1 and all(len(p.encode()) <= 4096 for p in parts)
    assert [p.split("\n", 1)[0] for p in parts] == [
        f"（{i}/{len(parts)}）" for i in range(1, len(parts) + 1)
    ]
    joined = "\n".join(p.split("\n", 1)[1] for p in parts)
    assert joined.count("### ") == 40
    brief = (demo_home / "briefs").glob("*.md").__next__().read_text(encoding="utf-8")
    assert [line for line in joined.splitlines() if line] == [
        line for line in brief.splitlines() if line
    ]


def test_telegram_parts_stay_within_4096_characters_and_go_to_the_chat(home):
    text = "\n".join(f"第 {i} 行：" + "威" * 300 for i in range(40))
    parts = split(text, "chars", 4096)
    assert len(parts) > 1 and all(len(p) <= 4096 for p in parts)
    assert "".join(p.split("\n", 1)[1] + "\n" for p in parts).strip() == text
    one_line = split("长" * 10_000, "chars", 4096)
    assert all(len(p) <= 4096 for p in one_line) and len(one_line) == 3
    with PushServer(reply={"ok": True}) as telegram:
        env = channel("tg", "telegram", telegram.url("/botTOKEN-abc123/sendMessage?chat_id=42"))
        sent = cli("notify", "test", "tg", env=env)
    assert sent.returncode == 0, sent.stderr
    (request,) = telegram.received
    assert request.path == "/botTOKEN-abc123/sendMessage" and request.json["chat_id"] == "42"
    no_secret_in(sent.stdout, sent.stderr)


def test_the_generic_webhook_is_signed_over_timestamp_and_body(home):
    with PushServer(reply={}) as hook:
        env = channel("hook", "webhook", hook.url(), secret=True)
        assert cli("notify", "test", "hook", env=env).returncode == 0
    (request,) = hook.received
    stamp = request.headers["X-Wyckoff-Timestamp"]
    expected = hmac.new(SECRET.encode(), stamp.encode() + b"." + request.body, hashlib.sha256)
    assert request.headers["X-Wyckoff-Signature"] == "sha256=" + expected.hexdigest()
    assert request.json["title"] == "Wyckoff 测试" and SECRET not in request.body.decode()


def test_a_refusing_channel_does_not_stop_the_others_and_the_exit_code_says_so(home):
    with (
        PushServer(status=500) as broken,
        PushServer(reply={"code": 19021, "msg": "sign match fail"}) as refusing,
        PushServer(reply={"errcode": 0}) as working,
    ):
        env = channel("a", "wecom", broken.url())
        env |= channel("b", "feishu", refusing.url(), secret=True)
        env |= channel("c", "wecom", working.url())
        sent = cli("notify", "test", "all", env=env)
    assert sent.returncode == 1
    assert len(working.received) == 1
    assert "a（wecom）拒绝了推送：HTTP 500" in sent.stderr
    assert "b（feishu）拒绝了推送：19021 sign match fail" in sent.stderr
    assert "已推送到 c" in sent.stderr
    no_secret_in(sent.stdout, sent.stderr)
    unreachable = cli("notify", "test", "c", env={"C_URL": "http://127.0.0.1:9" + TOKEN_PATH})
    assert unreachable.returncode == 1 and "连不上" in unreachable.stderr
    no_secret_in(unreachable.stderr)


def test_email_goes_over_starttls_with_the_password_from_the_environment(
    home, tmp_path, monkeypatch
):
    cert, key = self_signed_certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server = SmtpServer(cert, key)
    try:
        url = f"smtp://me%40example.cn@localhost:{server.port}?to=you@example.cn"
        env = channel("mail", "email", url, secret=True)
        sent = cli("notify", "test", "mail", env=env)
    finally:
        server.close()
    assert sent.returncode == 0, sent.stderr
    assert server.logins == [("me@example.cn", SECRET)]
    (message,) = server.messages
    assert "To: you@example.cn" in message and "Subject: Wyckoff" in message
    no_secret_in(sent.stdout, sent.stderr)


def test_channels_are_listed_masked_and_bad_channels_are_refused(home):
    env = channel("fs", "feishu", "https://open.feishu.cn" + TOKEN_PATH, secret=True)
    listed = cli("notify", "list", "--json", env=env)
    (shown,) = json.loads(listed.stdout)["channels"]
    assert shown["url"] == "https://open.feishu.cn/***" and shown["url_env"] == "FS_URL"
    no_secret_in(listed.stdout, (home / "wyckoff.db").read_bytes().decode("utf-8", "replace"))
    missing = cli("notify", "test", "fs")  # the variables are not set in this run
    assert missing.returncode == 1 and "FS_URL 没有设置" in missing.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("add", "x", "--kind", "slack", "--url-env", "X"), "没有渠道类型 slack"),
        (
            ("add", "x", "--kind", "wecom", "--url-env", "https://qyapi.weixin.qq.com/x"),
            "环境变量的名字",
        ),
        (("add", "x y", "--kind", "wecom", "--url-env", "X"), "渠道名"),
        (("rm", "nope"), "没有名为 nope"),
        (("test", "nope"), "没有名为 nope"),
    ],
)
def test_bad_notify_input_says_why(home, args, says):
    result = cli("notify", *args)
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr
    assert json.loads(cli("notify", "list", "--json").stdout)["channels"] == []


def test_a_hostile_service_echoing_the_key_back_never_gets_it_shown(home):
    # the service puts the webhook key and the secret into its error: neither may be shown
    echo = {"errcode": 93000, "errmsg": f"invalid webhook key TOKEN-abc123 (secret {SECRET})"}
    with PushServer(reply=echo) as hostile:
        url = hostile.url("/cgi-bin/webhook/send?key=TOKEN-abc123")
        env = channel("wx", "wecom", url, secret=True)
        sent = cli("notify", "test", "wx", env=env)
    assert sent.returncode == 1 and "93000 invalid webhook key ***" in sent.stderr
    no_secret_in(sent.stdout, sent.stderr)


# --- hostile webhooks: a slow answer, a redirect, an address that is not a web hook ---------


@pytest.mark.parametrize("kind", ["webhook", "email"])
def test_a_service_dripping_its_answer_fails_within_the_deadline(home, monkeypatch, kind):
    if kind == "email":
        monkeypatch.setattr("wyckoff.routine.mail.DEADLINE_S", 2.0)
        server = DripServer(DripServer.SMTP, speaks_first=True)
        url, says = f"smtp://me@127.0.0.1:{server.port}?to=you@example.cn", "2 秒内没有完成发送"
    else:
        monkeypatch.setattr("wyckoff.routine.notify.DEADLINE_S", 2.0)
        server = DripServer()
        url, says = server.url(), "hook（webhook）在 2 秒内没有完成推送"
    with server:
        env = channel("hook", kind, url, secret=True)
        started = time.monotonic()
        sent = cli("notify", "test", "hook", env=env)
        took = time.monotonic() - started
    assert sent.returncode == 1 and says in sent.stderr
    assert took < 15  # the answer drips for 40 s
    assert "已推送" not in sent.stderr and "Traceback" not in sent.stderr


@pytest.fixture
def connections(monkeypatch) -> list[str]:
    """Every host this process looks up or connects to (seen before the loopback guard
    refuses any other)."""
    attempted: list[str] = []
    guarded_connect, guarded_lookup = socket.socket.connect, socket.getaddrinfo

    def connect(sock, address):
        attempted.append(str(address[0]))
        return guarded_connect(sock, address)

    def getaddrinfo(host, *args, **kwargs):
        attempted.append(str(host))
        return guarded_lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempted


def test_a_redirect_to_another_port_is_not_followed(home, connections):
    elsewhere = PushServer()
    with elsewhere, PushServer(status=302, location=elsewhere.url("/collect")) as hook:
        env = channel("hook", "webhook", hook.url())
        sent = cli("notify", "test", "hook", env=env)
    assert sent.returncode == 1 and "返回了重定向（HTTP 302）：推送不跟随重定向" in sent.stderr
    assert len(hook.received) == 1 and elsewhere.received == []
    no_secret_in(sent.stderr)


def test_a_redirect_to_the_cloud_metadata_address_is_never_tried(home, connections):
    metadata = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    with PushServer(status=302, location=metadata) as hook:
        env = channel("hook", "webhook", hook.url())
        sent = cli("notify", "test", "hook", env=env)
    assert "169.254.169.254" not in connections and "127.0.0.1" in connections
    assert sent.returncode == 1 and "推送不跟随重定向" in sent.stderr


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("file:///etc/passwd", "用的是 file 协议：推送只接受 https:// 地址"),
        ("ftp://example.com/hook", "用的是 ftp 协议：推送只接受 https:// 地址"),
        ("http://example.com/hook", "example.com 要用 https://"),
    ],
)
def test_notify_add_refuses_an_address_that_is_not_https(home, url, says):
    added = cli("notify", "add", "x", "--kind", "webhook", "--url-env", "X_URL", env={"X_URL": url})
    assert added.returncode == 2 and says in added.stderr
    assert added.stderr.startswith("错误：没有添加渠道 x：X_URL 里的地址")
    assert added.stderr.count("\n") == 1 and "Traceback" not in added.stderr
    assert json.loads(cli("notify", "list", "--json").stdout)["channels"] == []


def test_an_address_changed_after_notify_add_is_checked_at_each_push(home):
    local = {"X_URL": "http://127.0.0.1:9/hook"}  # http to this machine is accepted
    assert (
        cli("notify", "add", "x", "--kind", "webhook", "--url-env", "X_URL", env=local).returncode
        == 0
    )
    sent = cli("notify", "test", "x", env={"X_URL": "file:///etc/passwd"})
    assert (
        sent.returncode == 1 and "推送失败：渠道 x：X_URL 里的地址用的是 file 协议" in sent.stderr
    )
    assert "已推送" not in sent.stderr and "root:" not in sent.stderr + sent.stdout
