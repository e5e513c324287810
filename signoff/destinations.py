"""Where deliveries and notifications may go (docs/design.md section 10, "Where deliveries
may go"). A URL is checked twice: at registration, what it says alone (no userinfo; a
host spelling an address, or ``localhost``, must be allowed; no name is resolved inside
a transaction); then at each connection, the address about to be connected to, after
resolution (``socket_factory``), so a name that resolves elsewhere later (DNS rebinding)
is refused when it would be reached.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from signoff.errors import DestinationRefused

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Refused whatever SIGNOFF_DELIVERY_ALLOW_NETWORKS says: "this host" (0.0.0.0 reaches
# the local machine on Linux), link-local (where cloud metadata services answer), other
# clouds' metadata addresses, multicast and broadcast.
ALWAYS_REFUSED: tuple[Network, ...] = tuple(
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",
        "169.254.0.0/16",
        "100.100.100.200/32",  # Alibaba Cloud's metadata service
        "168.63.129.16/32",  # Azure's host endpoint
        "224.0.0.0/4",
        "255.255.255.255/32",
        "::/128",
        "fe80::/10",
        "fd00:ec2::254/128",  # AWS's metadata service over IPv6
        "ff00::/8",
    )
)
LOCAL_NAMES = ("localhost", "localhost.localdomain")
LOCAL_ADDRESSES = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))
# Reasons, as the refusal's ``reason`` detail says them.
RESERVED = "RESERVED"
NOT_ALLOWED = "NOT_ALLOWED"
USERINFO = "USERINFO"


@dataclass(frozen=True)
class DestinationPolicy:
    """Public addresses, and the non-public networks ``allowed`` names; never those of
    ``ALWAYS_REFUSED``."""

    allowed: tuple[Network, ...] = ()

    def refusal(self, address: Address) -> str | None:
        """Why ``address`` may not be reached (``RESERVED``, ``NOT_ALLOWED``), or ``None``."""
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
        if any(address in network for network in ALWAYS_REFUSED):
            return RESERVED
        if address.is_global or any(address in network for network in self.allowed):
            return None
        return NOT_ALLOWED

    def check_url(self, url: str, field: str = "url") -> None:
        """``DESTINATION_REFUSED`` for what the URL alone shows may not be reached."""
        parts = urlsplit(url)
        if carries_userinfo(url):
            raise DestinationRefused(
                "A URL may not carry a user name or password: put credentials in the "
                "receiver's check of the signature, or in a header it expects.",
                field=field,
                reason=USERINFO,
            )
        for address in spelled_addresses(parts.hostname or ""):
            reason = self.refusal(address)
            if reason is not None:
                raise refused(address, reason, field=field)

    def socket_factory(self, addr_info: tuple[Any, ...]) -> socket.socket:
        """aiohttp's ``socket_factory``: a socket for an address it is about to connect to,
        once that address is allowed (``DestinationRefusedError`` otherwise)."""
        family, kind, proto, _, sockaddr = addr_info
        address = ipaddress.ip_address(str(sockaddr[0]).partition("%")[0])
        reason = self.refusal(address)
        if reason is not None:
            raise DestinationRefusedError(reason)
        return socket.socket(family=family, type=kind, proto=proto)


class DestinationRefusedError(OSError):
    """A connection the destination policy refused, raised where aiohttp opens sockets.

    Its message names no address, so that when every address of a name is refused, the
    connector passes this error itself on (it merges errors whose messages differ)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"destination refused ({reason})")
        self.reason = reason


def carries_userinfo(url: str) -> bool:
    """Whether the URL names a user (and a password): the HTTP client would send them."""
    return "@" in urlsplit(url).netloc


def refused_connection(error: BaseException) -> bool:
    """Whether a client's connection error is the destination policy's refusal."""
    return isinstance(getattr(error, "os_error", None), DestinationRefusedError)


def spelled_addresses(host: str) -> Iterable[Address]:
    """The addresses a URL's host spells without asking DNS: an IP address in any form the
    resolver accepts (``127.1``, ``0x7f000001``, ``2130706433``), or a name for this host."""
    host = host.rstrip(".").lower()
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return LOCAL_ADDRESSES
    try:
        return (ipaddress.ip_address(host),)
    except ValueError:
        pass
    try:
        return (ipaddress.IPv4Address(socket.inet_aton(host)),)
    except OSError:
        return ()


def refused(address: Address, reason: str, *, field: str = "url") -> DestinationRefused:
    """The refusal of a URL whose host is ``address``."""
    if reason == RESERVED:
        why = "it is reserved (this host, link-local or a cloud metadata service)"
    else:
        why = "it is not public; SIGNOFF_DELIVERY_ALLOW_NETWORKS may allow its network"
    return DestinationRefused(
        f"Signoff does not deliver to {address}: {why}.", field=field, reason=reason
    )
