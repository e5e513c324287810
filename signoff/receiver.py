"""``signoff receiver``: a demo webhook receiver that verifies signatures and prints deliveries.

It is also the reference for writing your own: verify with ``signoff.webhooks.verify``,
deduplicate on ``webhook-id`` (``msg_<proposal id>``, the same on every attempt), answer
2xx once the action is applied (or 202 and report later with ``reportActionResult``).
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from signoff.webhooks import WebhookVerificationError, verify


def create_receiver(
    secret: str | None, *, status: int = 200, out: TextIO = sys.stdout
) -> Starlette:
    """A receiver accepting any path; without ``secret`` signatures are shown, not checked."""
    seen: set[str] = set()

    async def receive(request: Request) -> Response:
        body = await request.body()
        if secret is None:
            verdict = "signature NOT CHECKED (no --secret)"
        else:
            try:
                verify(secret, headers=request.headers, body=body)
            except WebhookVerificationError as exc:
                print(f"REFUSED {request.method} {request.url.path}: {exc}", file=out, flush=True)
                return JSONResponse({"error": "invalid signature"}, status_code=401)
            verdict = "signature verified"
        msg_id = request.headers.get("webhook-id", "")
        repeat = " (repeat: same webhook-id seen before)" if msg_id in seen else ""
        seen.add(msg_id)
        try:
            shown = json.dumps(json.loads(body), indent=2, sort_keys=True)
        except ValueError:
            shown = body.decode("utf-8", "replace")
        print(
            f"{request.method} {request.url.path} webhook-id={msg_id} "
            f"attempt={request.headers.get('signoff-attempt')} {verdict}{repeat}\n{shown}",
            file=out,
            flush=True,
        )
        return JSONResponse({"received": True}, status_code=status)

    return Starlette(
        routes=[Route("/{path:path}", receive, methods=["POST", "PUT", "PATCH", "DELETE"])]
    )
