"""The delivery benchmark's receiver, in its own process so it never shares the worker's
event loop or core: verifies each request's signature, answers 200 at once, and notes when
each ``webhook-id`` was first seen.

    python bench/counting_receiver.py --port 9000   # secret in SIGNOFF_RECEIVER_SECRET

``GET /stats`` answers ``{"distinct": …, "requests": …}``; ``GET /seen`` the first-seen time
(Unix seconds) of every webhook-id.
"""

from __future__ import annotations

import argparse
import os
import time

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from signoff.webhooks import verify

SECRET = os.environ.get("SIGNOFF_RECEIVER_SECRET", "")
seen: dict[str, float] = {}
requests = 0


async def hook(request: Request) -> Response:
    global requests
    body = await request.body()
    verify(SECRET, headers=request.headers, body=body)
    requests += 1
    seen.setdefault(request.headers["webhook-id"], time.time())
    return Response(b'{"ok":true}', media_type="application/json")


async def stats(_: Request) -> Response:
    return JSONResponse({"distinct": len(seen), "requests": requests})


async def seen_at(_: Request) -> Response:
    return JSONResponse(seen)


app = Starlette(
    routes=[
        Route("/hook", hook, methods=["POST"]),
        Route("/stats", stats),
        Route("/seen", seen_at),
    ]
)

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False)
