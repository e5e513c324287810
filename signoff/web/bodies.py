"""Request bodies for ASGI middleware that must see a whole body before the app does:
read it once, then hand the app a ``receive`` that replays it."""

from __future__ import annotations

from starlette.types import Message, Receive


class BodyTooLarge(Exception):
    """The body went past the reader's limit; what was read is dropped."""


async def read_body(receive: Receive, max_bytes: int | None = None) -> bytes | None:
    """The whole body, or ``None`` if the client went away first; ``BodyTooLarge`` as soon
    as it is over ``max_bytes``, without reading the rest."""
    body = bytearray()
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body.extend(message.get("body", b""))
        more = message.get("more_body", False)
        if max_bytes is not None and len(body) > max_bytes:
            raise BodyTooLarge()
    return bytes(body)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then what the server's ``receive`` gives
    (the disconnect, once the client goes: a streamed answer waits for it)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
