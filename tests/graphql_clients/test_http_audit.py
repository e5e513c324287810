"""GraphQL over HTTP as the specification's own audit checks it: ``graphql-http``'s
``auditServer``, under Node, against a real ``signoff serve``."""

from __future__ import annotations

from tests.graphql_clients.node import run_node
from tests.live import Server

# graphql-http 1.23.1 (pinned in package-lock.json) runs this many checks.
AUDIT_CHECKS = 61


async def test_every_check_of_the_graphql_over_http_audit_passes(shared_server: Server) -> None:
    results = await run_node("audit.mjs", f"{shared_server.url}/graphql")
    assert len(results) == AUDIT_CHECKS
    assert [r for r in results if r["status"] != "ok"] == []
