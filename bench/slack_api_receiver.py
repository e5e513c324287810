"""The Slack benchmark's fake Web API, in its own process so it never shares the
notifier's event loop: answers ``chat.postMessage`` at once as Slack does and notes when
each (proposal, channel) message first arrived.

    python bench/slack_api_receiver.py --port 9000

``GET /stats`` answers ``{"distinct": …, "requests": …}``; ``GET /seen`` the first-seen time
(Unix seconds) of every message, keyed ``<proposal id> <channel>``.
"""

from __future__ import annotations

import argparse
import json
import time

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

seen: dict[str, float] = {}
requests = 0


def _proposal_of(message: dict[str, object]) -> str:
    """The proposal a message is about: its Approve button's value names it."""
    for block in message.get("blocks", []):  # type: ignore[attr-defined]
        for element in block.get("elements", []):
            if element.get("action_id") == "signoff_approve":
                return str(json.loads(element["value"])["p"])
    return "?"


async def post_message(request: Request) -> Response:
    global requests
    arrived = time.time()
    message = json.loads(await request.body())
    requests += 1
    channel = str(message["channel"])
    seen.setdefault(f"{_proposal_of(message)} {channel}", arrived)
    return JSONResponse({"ok": True, "channel": channel, "ts": f"{arrived:.6f}"})


async def stats(_: Request) -> Response:
    return JSONResponse({"distinct": len(seen), "requests": requests})


async def seen_times(_: Request) -> Response:
    return JSONResponse(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = Starlette(
        routes=[
            Route("/api/chat.postMessage", post_message, methods=["POST"]),
            Route("/stats", stats),
            Route("/seen", seen_times),
        ]
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
