"""The pages behind approval links (docs/design.md section 5.7).

``GET /links/<token>`` shows what the link would decide (the payload and its digest) and
a form; it never decides, so a mail scanner or a chat preview fetching the link changes
nothing. ``POST /links/<token>`` from that form decides once, naming the digest shown.
Every answer is ``no-store`` and ``noindex``; requests are rate-limited per client.
"""

from __future__ import annotations

import html
import json
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from signoff import clock
from signoff.constants import (
    APPROVAL_LINK_MAX_CLIENTS_TRACKED,
    APPROVAL_LINK_RATE_LIMIT,
    APPROVAL_LINK_RATE_WINDOW_SECONDS,
)
from signoff.database import SessionMaker
from signoff.errors import ApprovalLinkUnusable, NotFound, SignoffError
from signoff.models import Decision
from signoff.models.proposal import format_expiry
from signoff.resolvers.core.work import WorkMaker
from signoff.resolvers.reach.links import LinkPage, decide_by_link, read_link
from signoff.web.ratelimit import RateLimiter

FORM_MAX_BYTES = 8 * 1024
HEADERS = {
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
    "x-robots-tag": "noindex, nofollow",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'none'; style-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'",
}
# The console's stylesheet (always served under /static, console on or off), so the page
# looks like the console. The link's token is in the page's path: no-referrer keeps it out
# of the stylesheet request.
STYLESHEET = "/static/console/console.css"
STATUS = {
    "UNKNOWN": 404,
    "USED": 410,
    "REVOKED": 410,
    "EXPIRED": 410,
    "SETTLED": 410,
    "REVIEWER_INELIGIBLE": 410,
    "CHANGED": 409,
}


def link_rate_limiter() -> RateLimiter:
    """``APPROVAL_LINK_RATE_LIMIT`` requests per client a window, GET and POST alike, as a
    bucket of that many refilled over the window. It reads ``signoff.clock`` so that tests
    can hold time still."""
    return RateLimiter(
        APPROVAL_LINK_RATE_LIMIT / APPROVAL_LINK_RATE_WINDOW_SECONDS,
        APPROVAL_LINK_RATE_LIMIT,
        max_keys=APPROVAL_LINK_MAX_CLIENTS_TRACKED,
        clock=lambda: clock.now().timestamp(),
    )


class ApprovalPages:
    """The endpoint for ``/links/{token}`` (``handle``)."""

    def __init__(
        self, work: WorkMaker, read: SessionMaker, limiter: RateLimiter | None = None
    ) -> None:
        self.work, self.read = work, read
        self.limiter = limiter or link_rate_limiter()

    async def handle(self, request: Request) -> Response:
        client = request.client.host if request.client else "unknown"
        if self.limiter.retry_after(client) is not None:
            return _page("Too many requests", "<p>Try again in a minute.</p>", 429)
        token = request.path_params["token"]
        if request.method == "POST":
            return await self._decide(request, token)
        async with self.read() as session:
            try:
                shown = await read_link(session=session, token=token, now=clock.now())
            except ApprovalLinkUnusable as refused:
                return _refused(refused)
        return _page("Review and decide", _confirmation(shown), 200)

    async def _decide(self, request: Request, token: str) -> Response:
        body = await request.body()
        if len(body) > FORM_MAX_BYTES:
            return _page("Refused", "<p>The form is too large.</p>", 413)
        form = {key: values[0] for key, values in parse_qs(body.decode(errors="replace")).items()}
        try:
            decision = Decision(form.get("decision", ""))
        except ValueError:
            return _page("Refused", "<p>Choose approve or reject.</p>", 400)
        async with self.work() as work:
            try:
                result = await decide_by_link(
                    work=work,
                    token=token,
                    payload_digest=form.get("payload_digest", ""),
                    decision=decision,
                    reason=form.get("reason"),
                )
            except ApprovalLinkUnusable as refused:
                return _refused(refused)
            except NotFound as missing:
                return _page("Refused", f"<p>{html.escape(missing.message)}</p>", 404)
            except SignoffError as refused:
                return _page(
                    "Refused",
                    f"<p>{html.escape(refused.message)}</p><p><code>{refused.code}</code></p>",
                    409,
                )
        state = html.escape(str(result.proposal.state))
        return _page(
            "Decision recorded",
            f"<p>You {decision.value.lower()} it. The proposal is now <b>{state}</b>.</p>",
            200,
        )


def _refused(refused: ApprovalLinkUnusable) -> Response:
    reason = str(refused.details.get("reason", "UNKNOWN"))
    body = f"<p>{html.escape(refused.message)}</p><p><code>{html.escape(reason)}</code></p>"
    return _page("Link not usable", body, STATUS.get(reason, 410))


def _confirmation(shown: LinkPage) -> str:
    proposal, digest = shown.proposal, shown.link.payload_digest
    rows = [
        ("Reviewer", shown.reviewer.name),
        ("Target", shown.target.name),
        ("Action", proposal.action_code),
        ("Approvals", f"{proposal.approval_count} of {proposal.required_approvals}"),
        ("Decide by", format_expiry(min(shown.link.expires_at, proposal.expires_at))),
        ("Digest", digest),
    ]
    facts = "".join(
        f"<dt>{html.escape(k)}</dt><dd><code>{html.escape(v)}</code></dd>" for k, v in rows
    )
    material = {"subject": proposal.subject, "payload": proposal.payload}
    if proposal.preconditions:
        material["preconditions"] = proposal.preconditions
    shown_json = html.escape(json.dumps(material, indent=2, sort_keys=True))
    return (
        f'<dl class="facts">{facts}</dl><pre>{shown_json}</pre>'
        '<section class="actions" aria-label="Decide">'
        '<form method="post" class="decide">'
        f'<input type="hidden" name="payload_digest" value="{html.escape(digest)}">'
        '<label for="reason">Reason (optional)</label>'
        '<textarea id="reason" name="reason" rows="3" maxlength="2000"></textarea>'
        '<div class="buttons">'
        '<button type="submit" name="decision" value="APPROVED" class="primary">Approve</button>'
        '<button type="submit" name="decision" value="REJECTED" class="danger">Reject</button>'
        "</div></form>"
        '<p class="hint">Nothing is decided until you press a button.</p></section>'
    )


def _page(title: str, body: str, status: int) -> Response:
    document = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta name='color-scheme' content='light'>"
        "<meta name='referrer' content='no-referrer'><meta name='robots' content='noindex'>"
        f"<title>Signoff: {html.escape(title)}</title>"
        f"<link rel='stylesheet' href='{STYLESHEET}'></head>"
        "<body><header class='bar'><h1>Signoff</h1></header>"
        f"<main><article class='task-page'><h2>{html.escape(title)}</h2>{body}</article></main>"
        "</body></html>"
    )
    return HTMLResponse(document, status_code=status, headers=HEADERS)
