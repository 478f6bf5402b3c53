"""Which web addresses web_fetch may connect to: public unicast only (SSRF rules).

A host is resolved once; every address it resolves to must be public, and the connection
goes to that checked address (no second lookup an attacker's DNS could answer
differently). Literal IPs in any spelling the C library accepts (decimal 2130706433,
hex, octal, IPv4-mapped / 6to4 / NAT64 IPv6) are judged by the IPv4 address inside.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from wyckoff.cli.tools import ToolFailure

# Tests serve pages on one loopback address (e.g. 127.0.0.2, the only network they have)
# and name it here; any other loopback address stays refused. Nothing else sets this.
ALLOW_LOOPBACK_ENV = "WYCKOFF_TEST_FETCH_ALLOW_LOOPBACK"
METADATA = {
    ipaddress.ip_address("169.254.169.254"): "云主机元数据地址",
    ipaddress.ip_address("100.100.100.200"): "阿里云元数据地址",
    ipaddress.ip_address("fd00:ec2::254"): "云主机元数据地址",
}
CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPV4_LITERAL = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+)){0,3}$", re.IGNORECASE)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]


def resolve_host(host: str, port: int) -> list[str]:
    """The addresses the system resolver gives for `host`."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def literal_address(host: str) -> Address | None:
    """`host` as an IP address if it is one, in any spelling inet_aton accepts."""
    try:
        return ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        pass
    if IPV4_LITERAL.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def embedded_ipv4(address: Address) -> Address:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64, Teredo), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped:
            return address.ipv4_mapped
        if address.sixtofour:
            return address.sixtofour
        if address.teredo:
            return address.teredo[1]
        if address in NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


LOOPBACK = "回环地址（本机）"


def refusal(address: Address) -> str | None:
    """Why `address` must not be fetched (a Chinese phrase), or None for a public one.
    An IPv6 address carrying an IPv4 one is judged by that IPv4 address alone."""
    inner = embedded_ipv4(address)
    if inner != address:
        return _kind(inner)
    if str(address) == os.environ.get(ALLOW_LOOPBACK_ENV) and address.is_loopback:
        return None
    return _kind(address)


def _kind(address: Address) -> str | None:
    if address in METADATA:
        return METADATA[address]
    if address.is_loopback:
        return LOOPBACK
    if address.is_multicast:
        return "组播地址"
    if address.is_link_local:
        return "链路本地地址"
    if address in CGNAT:
        return "运营商级 NAT 地址（100.64.0.0/10）"
    if address.is_private:
        return "内网地址"
    if not address.is_global:
        return "非公网地址"
    return None


def checked_target(url: str, resolver: Resolver = resolve_host) -> tuple[str, int, str]:
    """(host, port, address to connect to) for `url`, or a ToolFailure saying why not."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ToolFailure(f"只能读取 http 或 https 网页，{url} 的协议是 {parts.scheme or '空'}。")
    if parts.username or parts.password:
        raise ToolFailure(f"{url} 带有用户名或密码，web_fetch 不发送凭据。")
    host = parts.hostname or ""
    if not host:
        raise ToolFailure(f"{url} 没有主机名。")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ToolFailure(f"{url} 的端口无效。") from None
    literal = literal_address(host)
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = resolver(host, port)
        except OSError as exc:
            raise ToolFailure(f"无法解析主机 {host}：{exc}。") from None
    for text in addresses:
        reason = refusal(ipaddress.ip_address(text.split("%")[0]))
        if reason:
            raise ToolFailure(f"拒绝访问 {url}：{host} 指向 {text}，是{reason}。")
    if not addresses:
        raise ToolFailure(f"主机 {host} 没有地址。")
    return host, port, addresses[0]
