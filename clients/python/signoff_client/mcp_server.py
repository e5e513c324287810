"""``signoff-approvals-mcp`` (and ``signoff mcp``): Signoff's approval step as MCP tools.

A client of the Signoff named by ``SIGNOFF_URL``; every result is structured and
readable. Over stdio it acts as the agent whose token is ``SIGNOFF_TOKEN``. Over HTTP
nothing is served without a credential: each MCP client sends its own bearer token (a
Signoff token or the identity provider's access token), which Signoff checks on every
request and the tools forward, as the MCP authorization specification has a resource
server do (protected resource metadata, 401 with ``WWW-Authenticate``). No call is held
for long: ``wait_for_decision`` waits a bounded time, then asks a client that speaks the
multi round-trip flow to call again with a request state, and tells any other
``still_waiting``. Run ``signoff-approvals-mcp`` (stdio) or ``signoff-approvals-mcp
--transport http --port 8765`` (at /mcp).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Literal, cast

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.request_state import RequestStateSecurity
from mcp_types import InputRequiredResult
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

from signoff_client.client import AsyncSignoff, Target
from signoff_client.errors import PayloadSchemaInvalid, SignoffError, StillWaiting
from signoff_client.generated.fragments import DraftFields, ProposalFields
from signoff_client.generated.input_types import PrepareDraftInput
from signoff_client.outcomes import APPLIED_STATES, Outcome, applied, implied_outcomes

MAX_WAIT_SECONDS = 55.0  # below the usual MCP client's request timeout
# The first protocol revision with the multi round-trip flow (an "input required" result
# the client answers by calling again with its request state).
MULTI_ROUND_VERSION = "2026-07-28"
# How long a round's request state stays valid: it names only the proposal, bound by the
# SDK to the same tool, arguments and caller, so a client may come back to it much later.
REQUEST_STATE_TTL_SECONDS = 24 * 3600.0
PROPOSING_ROLES = frozenset({"AGENT", "ADMIN"})
# Over HTTP, clients of Signoff kept for the tokens seen most recently.
HTTP_CLIENTS_KEPT = 64

INSTRUCTIONS = (
    "Signoff puts a human review step before side-effecting actions. Call list_targets to "
    "see what can be proposed and each payload's JSON Schema, propose_action to ask, then "
    "wait_for_decision (again later if it answers still_waiting). An amended proposal goes "
    "on only after accept_amendment with its new digest."
)


class RuleView(BaseModel):
    """One rule of a target's approval policy: a payload matching ``when`` needs
    ``approvals`` (0: let through at once). The first rule that matches decides."""

    name: str | None = None
    when: dict[str, Any] = Field(description="JSON Schema the payload must match.")
    approvals: int


class TargetView(BaseModel):
    id: str
    name: str
    input_schema: dict[str, Any] = Field(description="The payload's JSON Schema.")
    approval_mode: str
    required_approvals: int = Field(
        description="Approvals a proposal needs when no rule below matches it (0: none)."
    )
    rules: list[RuleView] = Field(
        default_factory=list,
        description="The approval policy's rules, in order; the first match decides.",
    )
    agent_executes: bool = Field(
        default=False,
        description="Approved actions are executed by the agent itself, once; otherwise "
        "Signoff delivers them.",
    )


class TargetList(BaseModel):
    targets: list[TargetView]


class ProposalView(BaseModel):
    proposal_id: str
    state: str
    target: str
    payload: dict[str, Any]
    payload_digest: str
    revision: int
    awaiting_proposer: bool = Field(description="An amendment waits for accept_amendment.")
    replayed: bool = False
    result: dict[str, Any] | None = Field(
        default=None,
        description="Once applied: what Signoff recorded of the receiver's answer (statusCode, "
        "responseDigest, attempts, appliedAt) and, for a target with an output schema, the "
        "answer itself (body).",
    )


Status = Literal["still_waiting", "approved", "rejected", "amended", "applied", "failed", "expired"]


class Decision(BaseModel):
    proposal_id: str
    status: Status
    message: str
    reason: str | None = None
    payload: dict[str, Any] | None = Field(
        default=None, description="approved, amended: the payload as it stands."
    )
    payload_digest: str | None = Field(
        default=None,
        description="approved, applied, failed: the digest the reviewers approved; amended: "
        "the new one, to pass to accept_amendment.",
    )
    result: dict[str, Any] | None = Field(
        default=None,
        description="applied: what Signoff recorded of the receiver's answer (statusCode, "
        "responseDigest, attempts, appliedAt) and, for a target with an output schema, the "
        "answer itself (body).",
    )


class DraftView(BaseModel):
    draft_id: str
    status: str
    revision: int
    values: dict[str, Any] | None
    values_digest: str | None
    updated_by_user: list[str]
    session_id: str
    replayed: bool = False


class Tools:
    """The tools' shared state: a client of Signoff for each token, and which tokens are
    known to be agents'. ``token``: the one token of stdio; ``None`` over HTTP, where each
    request's own bearer token is used, never another."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url
        self.token = token
        self._clients: dict[str, AsyncSignoff] = {}
        self._checked: set[str] = set()

    async def client(self) -> AsyncSignoff:
        """The client of this call's token, once it is known to be an agent's
        (``FORBIDDEN`` if not)."""
        token = self.token or _request_token()
        client = self._clients.get(token)
        if client is None:
            await self._forget_oldest()
            client = self._clients[token] = AsyncSignoff(self.url, token)
        if token not in self._checked:
            actor = await call(client.viewer())
            if actor.role.value not in PROPOSING_ROLES:
                held = "the token in SIGNOFF_TOKEN" if self.token else "your token"
                raise ToolError(
                    f"FORBIDDEN: {held} is {actor.name}'s, a {actor.role.value.lower()}; "
                    "signoff mcp needs an agent's token."
                )
            self._checked.add(token)
        return client

    async def _forget_oldest(self) -> None:
        """Keep at most ``HTTP_CLIENTS_KEPT`` clients: the oldest one goes first."""
        if len(self._clients) >= HTTP_CLIENTS_KEPT:
            token = next(iter(self._clients))
            self._checked.discard(token)
            await self._clients.pop(token).aclose()


def _request_token() -> str:
    """The bearer token of the HTTP request being served (checked by ``SignoffTokens``)."""
    access = get_access_token()
    if access is None:  # the transport serves no request without one
        raise ToolError("UNAUTHENTICATED: send your token (Authorization: Bearer <token>).")
    return access.token


class SignoffTokens:
    """The HTTP transport's token verifier: a bearer token is good while Signoff says
    whose it is (asked on every request, so a revoked token stops at once); it is then
    forwarded unchanged, so the caller acts as itself and Signoff applies its rules."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def verify_token(self, token: str) -> AccessToken | None:
        async with AsyncSignoff(self.url, token) as client:
            try:
                actor = await client.viewer()
            except SignoffError:  # unknown, revoked, expired, another audience...
                return None
        return AccessToken(token=token, client_id=actor.id, subject=actor.id, scopes=[])


async def call(awaitable: Any) -> Any:
    """Await a client call; a Signoff refusal becomes a tool error naming its code."""
    try:
        return await awaitable
    except PayloadSchemaInvalid as exc:
        fields = "; ".join(f"{p['pointer'] or '/'}: {p['message']}" for p in exc.problems)
        raise ToolError(f"{exc.code}: the payload does not meet the schema: {fields}") from exc
    except SignoffError as exc:
        raise ToolError(str(exc)) from exc


def proposal_view(proposal: ProposalFields, replayed: bool = False) -> ProposalView:
    return ProposalView(
        proposal_id=proposal.id,
        state=proposal.state.value,
        target=proposal.target.name,
        payload=dict(proposal.payload),
        payload_digest=proposal.payload_digest,
        revision=proposal.revision,
        awaiting_proposer=proposal.awaiting_proposer,
        replayed=replayed,
        result=applied(proposal).result if proposal.state in APPLIED_STATES else None,
    )


def target_view(target: Target) -> TargetView:
    """A target as the model reads it: what a payload needs to go through."""
    policy = target.approval_policy if isinstance(target.approval_policy, dict) else None
    auto = target.approval_mode.value == "BOUNDED_AUTO"
    required = 0 if auto else target.required_approvals
    if policy is not None:
        required = int(policy.get("default", {}).get("approvals", required))
    return TargetView(
        id=target.id,
        name=target.name,
        input_schema=dict(target.input_schema),
        approval_mode=target.approval_mode.value,
        required_approvals=required,
        rules=[
            RuleView(name=rule.get("name"), when=rule["when"], approvals=rule["approvals"])
            for rule in (policy or {}).get("rules", [])
        ],
        agent_executes=target.agent_executes,
    )


def decision_of(outcome: Outcome, approved_digest: str | None = None) -> Decision:
    """An outcome as the model reads it; ``approved_digest`` is the digest the reviewers
    approved, carried by the outcomes that follow an approval."""
    found = Decision(proposal_id=outcome.proposal_id, status=cast(Status, outcome.kind), message="")
    if outcome.kind in ("approved", "applied", "failed"):
        found.payload_digest = getattr(outcome, "payload_digest", None) or approved_digest
    match outcome.kind:
        case "approved":
            found.payload = getattr(outcome, "payload", None)
            found.message = "Approved: Signoff delivers it; wait again for how delivery ends."
        case "rejected":
            found.reason = getattr(outcome, "reason", None)
            found.message = f"Rejected: {found.reason or 'no reason given'}. Do not retry as is."
        case "amended":
            found.payload = getattr(outcome, "payload", None)
            found.payload_digest = getattr(outcome, "payload_digest", None)
            found.reason = getattr(outcome, "reason", None)
            found.message = (
                "A reviewer amended the payload; call accept_amendment with payload_digest "
                "to go on with it."
            )
        case "applied":
            found.result = getattr(outcome, "result", None)
            found.message = "Applied: the receiver took the action."
        case "failed":
            found.reason = getattr(outcome, "error_code", None)
            found.message = f"Delivery failed ({found.reason}); an operator may retry it."
        case "expired":
            found.message = "Expired: nobody decided in time."
    return found


def build(url: str, token: str | None, auth: AuthSettings | None = None) -> MCPServer[Any]:
    """The MCP server with Signoff's tools, for the server at ``url``: as ``token`` (stdio),
    or, with ``auth`` (HTTP), as each request's own bearer token."""
    server: MCPServer[Any] = MCPServer(
        "signoff",
        instructions=INSTRUCTIONS,
        request_state_security=RequestStateSecurity.ephemeral(ttl=REQUEST_STATE_TTL_SECONDS),
        auth=auth,
        token_verifier=None if auth is None else SignoffTokens(url),
    )
    tools = Tools(url, None if auth is not None else token)

    @server.tool()
    async def list_targets() -> TargetList:
        """The targets actions can be proposed to, with each payload's JSON Schema and the
        approvals it needs (the approval policy's rules, when the target has one)."""
        client = await tools.client()
        found = await call(client.targets())
        return TargetList(targets=[target_view(t) for t in found if t.active])

    @server.tool()
    async def propose_action(
        target: str,
        payload: dict[str, Any],
        subject: dict[str, Any] | None = None,
        operation_key: str | None = None,
    ) -> ProposalView:
        """Propose an action to a target (its name); it waits for human approval. The same
        proposal sent again answers with the first one (replayed)."""
        client = await tools.client()
        made = await call(client.propose(target, payload, subject=subject or {}, key=operation_key))
        return proposal_view(made.state, made.replayed)

    @server.tool()
    async def get_proposal(proposal_id: str) -> ProposalView:
        """A proposal as it is now."""
        client = await tools.client()
        handle = await call(client.proposal(proposal_id))
        return proposal_view(handle.state)

    @server.tool()
    async def wait_for_decision(
        proposal_id: str, ctx: Context, timeout_seconds: float = 25.0
    ) -> Decision | InputRequiredResult:
        """Wait up to timeout_seconds (at most 55) for the proposal's decision or, once
        approved, for its delivery. Still undecided: the client is asked to call again
        (multi round-trip), or the answer is still_waiting: call again later."""
        decision = await next_decision(await tools.client(), proposal_id, timeout_seconds)
        if decision.status != "still_waiting":
            return decision
        if is_version_at_least(ctx.protocol_version or "", MULTI_ROUND_VERSION):
            # Nothing to ask: the state (the SDK seals it) says what to call again for.
            state = json.dumps({"waiting_on": proposal_id})
            return InputRequiredResult(request_state=state, result_type="input_required")
        return decision

    @server.tool()
    async def accept_amendment(proposal_id: str, payload_digest: str) -> ProposalView:
        """Accept a reviewer's amendment (its payload_digest) so the proposal may go on."""
        client = await tools.client()
        handle = await call(client.proposal(proposal_id))
        await call(handle.accept_amendment(payload_digest))
        return proposal_view(handle.state)

    @server.tool()
    async def prepare_draft(
        request_id: str,
        session_id: str,
        account_id: str,
        owner: dict[str, Any],
        values: dict[str, Any] | None = None,
    ) -> DraftView:
        """Prepare a draft for a person to review and send (request_id replays)."""
        client = await tools.client()
        answer = await call(
            client.api.prepare_draft(
                input=PrepareDraftInput(
                    requestId=request_id,
                    sessionId=session_id,
                    accountId=account_id,
                    owner=owner,
                    values=values,
                )
            )
        )
        return draft_view(answer.prepare_draft.draft, answer.prepare_draft.replayed)

    @server.tool()
    async def get_draft(draft_id: str, session_id: str) -> DraftView:
        """One of this agent's drafts as it is now (the person may have edited it)."""
        client = await tools.client()
        return draft_view(await call(client.draft(draft_id, session_id)))

    return server


async def next_decision(client: AsyncSignoff, proposal_id: str, within: float) -> Decision:
    """The proposal's next outcome, waited for a bounded time, or ``still_waiting``."""
    handle = await call(client.proposal(proposal_id))
    known = implied_outcomes(handle.state)
    digest = handle.state.payload_digest
    if known and known[-1].kind != "approved":
        return decision_of(known[-1], digest)
    handle.returned = list(known)
    try:
        outcome = await call(handle.wait(min(max(within, 0.0), MAX_WAIT_SECONDS)))
    except ToolError as exc:
        if not isinstance(exc.__cause__, StillWaiting):
            raise
        if known:
            return decision_of(known[-1], digest)
        return Decision(
            proposal_id=proposal_id,
            status="still_waiting",
            message=(
                f"No decision yet on {proposal_id} ({handle.state.state.value}); call "
                "wait_for_decision again later."
            ),
        )
    return decision_of(outcome, handle.state.payload_digest)


def draft_view(draft: DraftFields, replayed: bool = False) -> DraftView:
    return DraftView(
        draft_id=draft.id,
        status=draft.status.value,
        revision=draft.revision,
        values=dict(draft.values) if draft.values is not None else None,
        values_digest=draft.values_digest,
        updated_by_user=list(draft.updated_by_user),
        session_id=draft.session_id,
        replayed=replayed,
    )


def http_auth(resource_url: str, authorization_server: str) -> AuthSettings:
    """The HTTP transport as an OAuth resource server (MCP authorization): its metadata at
    ``/.well-known/oauth-protected-resource/mcp`` names ``authorization_server`` as where
    tokens come from, and a request without a good one is answered 401 pointing there."""
    return AuthSettings.model_validate(
        {
            "issuer_url": authorization_server,
            "resource_server_url": resource_url,
            # Signoff checks each token's audience itself (SIGNOFF_OIDC_AUDIENCE): the
            # token is forwarded to it, not consumed here.
            "validate_token_resource": False,
        }
    )


def main(argv: list[str] | None = None) -> None:
    """Run the MCP server on stdio (the default) or streamable HTTP."""
    parser = argparse.ArgumentParser(
        prog="signoff-approvals-mcp", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--public-url",
        help="http: the URL MCP clients reach /mcp at, the resource their tokens are for "
        "(default: http://HOST:PORT/mcp)",
    )
    parser.add_argument(
        "--authorization-server",
        default=os.environ.get("SIGNOFF_MCP_AUTHORIZATION_SERVER"),
        help="http: where clients get tokens, named in the resource metadata: the identity "
        "provider's issuer (default: SIGNOFF_MCP_AUTHORIZATION_SERVER, else SIGNOFF_URL)",
    )
    args = parser.parse_args(argv)
    url, token = os.environ.get("SIGNOFF_URL"), os.environ.get("SIGNOFF_TOKEN")
    if not url:
        parser.error("set SIGNOFF_URL (the Signoff server)")
    if args.transport == "stdio":
        if not token:
            parser.error("set SIGNOFF_TOKEN (an agent's token) for stdio")
        build(url, token).run("stdio")
        return
    # Over HTTP, SIGNOFF_TOKEN is never used: whoever reaches the port would act with it.
    resource = args.public_url or f"http://{args.host}:{args.port}/mcp"
    auth = http_auth(resource, args.authorization_server or url)
    build(url, None, auth).run("streamable-http", host=args.host, port=args.port)


if __name__ == "__main__":
    main()
