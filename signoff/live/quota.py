"""How many live connections and subscriptions one token, and one actor, may hold in a
process.

A socket's own limit (``SIGNOFF_WS_MAX_OPERATIONS``) bounds one socket; without these one
token opened hundreds of sockets, each sent every event. Websockets and event streams count
together, per API process; zero turns a bound off. ``sockets_full`` and
``subscriptions_full`` refuse what is over a bound before anything is spent on it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from signoff.errors import TooManyConnections, TooManySubscriptions


@dataclass(frozen=True)
class LiveLimits:
    """The bounds, from settings (0: none)."""

    sockets_per_token: int = 0
    sockets_per_actor: int = 0
    subscriptions_per_token: int = 0
    subscriptions_per_actor: int = 0


class Slot:
    """One socket or subscription counted against its token and actor, until released."""

    __slots__ = ("_counts", "_keys")

    def __init__(self, counts: Counter[str], keys: tuple[str, str]) -> None:
        self._counts: Counter[str] | None = counts
        self._keys = keys

    def release(self) -> None:
        """Give the slot back (once; later calls do nothing)."""
        counts, self._counts = self._counts, None
        if counts is None:
            return
        for key in self._keys:
            counts[key] -= 1
            if counts[key] <= 0:
                del counts[key]  # a token or actor holding nothing costs nothing


class LiveQuota:
    """The sockets and subscriptions each token and actor holds in this process."""

    def __init__(self, limits: LiveLimits) -> None:
        self.limits = limits
        self._sockets: Counter[str] = Counter()
        self._subscriptions: Counter[str] = Counter()

    def open_socket(self, token: str, actor_id: str) -> Slot | None:
        """A connection's slot, or ``None`` when the token or its actor holds as many as
        allowed."""
        return _take(
            self._sockets,
            token,
            actor_id,
            self.limits.sockets_per_token,
            self.limits.sockets_per_actor,
        )

    def open_stream(self, token: str, actor_id: str) -> Slot:
        """An event stream's slot (it counts as a socket), or ``TooManyConnections``."""
        slot = self.open_socket(token, actor_id)
        if slot is None:
            bounds = _bounds(self.limits.sockets_per_token, self.limits.sockets_per_actor)
            raise TooManyConnections(
                "This token (or its actor) already holds as many live connections, websockets "
                f"and event streams together, as one process allows ({bounds}); close one first."
            )
        return slot

    def sockets_full(self, token: str) -> bool:
        """Whether ``token`` holds its bound of connections: one more is refused before the
        token is even read (only a token that authenticated holds any)."""
        limit = self.limits.sockets_per_token
        return bool(limit) and self._sockets[_token_key(token)] >= limit

    def subscriptions_full(self, token: str, actor_id: str) -> bool:
        """Whether one more subscription of ``token`` would be refused."""
        counts = self._subscriptions
        return any(
            limit and counts[key] >= limit
            for key, limit in zip(
                _keys(token, actor_id),
                (self.limits.subscriptions_per_token, self.limits.subscriptions_per_actor),
                strict=True,
            )
        )

    def too_many_subscriptions(self) -> TooManySubscriptions:
        """The refusal of a subscription over a bound, saying which bounds are set."""
        bounds = _bounds(self.limits.subscriptions_per_token, self.limits.subscriptions_per_actor)
        return TooManySubscriptions(
            "This token (or its actor) already runs as many live subscriptions as one "
            f"process allows ({bounds}); end some first."
        )

    def start_subscription(self, token: str, actor_id: str) -> Slot:
        """A subscription's slot, or ``TooManySubscriptions`` saying which bound it met."""
        slot = _take(
            self._subscriptions,
            token,
            actor_id,
            self.limits.subscriptions_per_token,
            self.limits.subscriptions_per_actor,
        )
        if slot is None:
            raise self.too_many_subscriptions()
        return slot

    def held(self, token: str) -> tuple[int, int]:
        """The sockets and subscriptions ``token`` holds now."""
        key = _token_key(token)
        return self._sockets[key], self._subscriptions[key]


def _token_key(token: str) -> str:
    return "t:" + token


def _keys(token: str, actor_id: str) -> tuple[str, str]:
    return _token_key(token), "a:" + actor_id


def _bounds(per_token: int, per_actor: int) -> str:
    """The bounds that are set, in words: ``64 per token, 128 per actor``."""
    named = ((per_token, "token"), (per_actor, "actor"))
    return ", ".join(f"{limit} per {holder}" for limit, holder in named if limit)


def _take(
    counts: Counter[str], token: str, actor_id: str, per_token: int, per_actor: int
) -> Slot | None:
    keys = _keys(token, actor_id)
    for key, limit in zip(keys, (per_token, per_actor), strict=True):
        if limit and counts[key] >= limit:
            return None
    for key in keys:
        counts[key] += 1
    return Slot(counts, keys)
