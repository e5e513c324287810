"""The Delivery page's "Receiving deliveries" (docs/delivery.md), run as printed.

Its ``python`` block is executed exactly as printed and served by uvicorn on loopback,
with only ``SECRET`` set to the target's signing secret, as a reader would. Signoff
delivers a real approved proposal to it. The document a receiver gets has the fields the
``json`` block shows, in the order it shows them.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx

from signoff.webhooks import sign
from tests.helpers import GraphQLClient, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved, read
from tests.readme_shell import page_section
from tests.receivers import Receiver, serve, serve_app

PAGE = "docs/delivery.md"
HEADING = "## Receiving deliveries"


def _block(language: str) -> str:
    """The one fenced block of ``language`` in the section."""
    text = page_section(PAGE, HEADING)
    [body] = re.findall(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)
    return str(body)


def _printed_receiver() -> dict[str, Any]:
    """The module the page's receiver is, executed as printed."""
    module: dict[str, Any] = {"__name__": "receiver"}
    exec(compile(_block("python"), f"{PAGE} ({HEADING})", "exec"), module)
    return module


async def test_the_printed_receiver_applies_a_delivery_once_and_refuses_a_forgery(
    gql: GraphQLClient, worker: Worker
) -> None:
    receiver = _printed_receiver()
    async with serve_app(receiver["app"]) as port:
        url = f"http://127.0.0.1:{port}/hooks"
        world = await build_world(gql, url=url)
        receiver["SECRET"] = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "APPLIED"
        webhook_id = f"msg_{proposal['id']}"
        assert receiver["applied"] == {webhook_id}

        body = json.dumps({"action_id": proposal["id"]}).encode()
        headers = sign(world.signing_secret, webhook_id, int(time.time()), body)
        async with httpx.AsyncClient() as http:
            again = await http.post(url, content=body, headers=headers)
            forged = await http.post(url, content=body + b" ", headers=headers)
            unsigned = await http.post(url, content=body)

    state = await read(world, proposal["id"])
    assert state["state"] == "APPLIED"
    [attempt] = state["attempts"]
    assert attempt["statusCode"] == 204 and attempt["responseClass"] == "APPLIED"
    # The same message again, as a retry sends it: answered, and not applied twice.
    assert again.status_code == 204
    assert receiver["applied"] == {webhook_id}
    assert (forged.status_code, unsigned.status_code) == (401, 401)


async def test_a_delivery_has_the_fields_printed_in_their_order(
    gql: GraphQLClient, worker: Worker
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "APPLIED"

    printed = json.loads(_block("json"))
    [request] = receiver.requests
    assert list(request.body) == list(printed)
    assert request.body["schema_version"] == printed["schema_version"]
    assert request.body["revision"] == printed["revision"] == 1
