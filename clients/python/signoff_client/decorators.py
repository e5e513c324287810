"""``@requires_approval``: a function whose call is proposed first and runs only once
approved, with the arguments as approved (an accepted amendment's, if one was made), and
at most once per approval.

On a target its agent executes (registered without a url), the body runs inside the
approval's one execution (``executions.execute``): a call whose proposal was executed
before, here or in another process, returns the result recorded then (or raises
``AlreadyExecuted``) without running the body again. On a target Signoff delivers
itself, the body is never run: the delivery is Signoff's, and the call returns how it
ended (``Applied`` or ``Failed``).

Each call is a new proposal, unless ``key`` names the call (a ticket id, say): the same
key then answers with the proposal it made first, so a process that crashed and runs the
call again neither proposes nor executes twice.
"""

from __future__ import annotations

import functools
import inspect
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

from signoff_client.client import AsyncSignoff, Signoff
from signoff_client.errors import NotApproved
from signoff_client.executions import Recorded, execute, report_applied, report_failed, take
from signoff_client.outcomes import FINAL_KINDS, Amended, Approved, Outcome, Rejected
from signoff_client.proposals import Proposal

F = TypeVar("F", bound=Callable[..., Any])
OnReject = Literal["raise", "return"]
KEY_CHARS = 200  # an operation key's longest

__all__ = ["NotApproved", "payload_of", "refusal_text", "requires_approval"]


def payload_of(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments by name, defaults filled in: the payload proposed."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


@dataclass(frozen=True)
class Settings:
    """What ``requires_approval`` was given, for each call."""

    target: str
    action: str
    subject: Any
    timeout: float | None
    key: Callable[..., Any] | None
    accept_amendments: bool
    on_reject: OnReject
    lease_seconds: int | None

    def operation_key(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        """The call's own key with ``key``, else a new one: each call a new proposal."""
        if self.key is None:
            return f"{self.action}:{uuid.uuid4().hex}"
        return f"{self.target}:{self.action}:{self.key(*args, **kwargs)}"[:KEY_CHARS]


def requires_approval(
    *,
    target: str,
    client: Signoff | AsyncSignoff | None = None,
    action: str | None = None,
    subject: Any = None,
    timeout: float | None = None,
    key: Callable[..., Any] | None = None,
    accept_amendments: bool = False,
    on_reject: OnReject = "raise",
    lease_seconds: int | None = None,
) -> Callable[[F], F]:
    """Propose each call to ``target`` and go on only once approved.

    The payload is the call's arguments by name. ``key`` (called with the same
    arguments) names the call for crash-safe retries; without it each call is a new
    proposal. ``client`` defaults to one made from ``SIGNOFF_URL`` and ``SIGNOFF_TOKEN``
    (sync for a plain function, async for a coroutine function), closed after the call.
    ``subject`` defaults to ``{"function": <qualified name>}``. A rejection (or an
    expiry, or an amendment not accepted) raises ``NotApproved``; with
    ``on_reject="return"`` the call returns a sentence saying so instead, for a model to
    read as the tool's result."""

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        name = f"{function.__module__}.{function.__qualname__}"
        settings = Settings(
            target=target,
            action=action or function.__name__,
            subject=subject if subject is not None else {"function": name},
            timeout=timeout,
            key=key,
            accept_amendments=accept_amendments,
            on_reject=on_reject,
            lease_seconds=lease_seconds,
        )

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                if isinstance(client, AsyncSignoff):
                    return await _call_async(client, settings, function, signature, args, kwargs)
                async with AsyncSignoff.from_env() as signoff:
                    return await _call_async(signoff, settings, function, signature, args, kwargs)

            return cast(F, run_async)

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            signoff = client if isinstance(client, Signoff) else Signoff.from_env()
            try:
                return _call(signoff, settings, function, signature, args, kwargs)
            finally:
                if client is None:
                    signoff.close()

        return cast(F, run)

    return decorate


async def _call_async(
    signoff: AsyncSignoff,
    settings: Settings,
    function: Callable[..., Any],
    signature: inspect.Signature,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    made = await _propose(signoff, settings, signature, args, kwargs)
    refused = await _decided(made, settings)
    if refused is not None:
        return refused
    if not made.state.agent_executes:
        return await delivered(made, settings.timeout)
    return await execute(made, function, lease_seconds=settings.lease_seconds)


def _call(
    signoff: Signoff,
    settings: Settings,
    function: Callable[..., Any],
    signature: inspect.Signature,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """The sync decorator: the body runs in the caller's thread, the rest on the client's
    loop."""
    portal = signoff._portal
    made = portal.call(lambda: _propose(signoff.aio, settings, signature, args, kwargs))
    refused = portal.call(_decided, made, settings)
    if refused is not None:
        return refused
    if not made.state.agent_executes:
        return portal.call(delivered, made, settings.timeout)
    taken = portal.call(lambda: take(made, lease_seconds=settings.lease_seconds))
    if isinstance(taken, Recorded):
        return taken.result
    try:
        returned = function(**taken.payload)
    except BaseException as exc:
        portal.call(report_failed, made, taken, exc)
        raise
    portal.call(report_applied, made, taken, returned)
    return returned


async def _propose(
    signoff: AsyncSignoff,
    settings: Settings,
    signature: inspect.Signature,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Proposal:
    return await signoff.propose(
        settings.target,
        payload_of(signature, args, kwargs),
        subject=settings.subject,
        action=settings.action,
        key=settings.operation_key(args, kwargs),
    )


async def _decided(proposal: Proposal, settings: Settings) -> str | None:
    """``None`` once approved; a refusal's sentence with ``on_reject="return"``."""
    try:
        await decide(proposal, settings.timeout, settings.accept_amendments)
    except NotApproved as refused:
        if settings.on_reject == "return":
            return refusal_text(refused.outcome)
        raise
    return None


async def decide(
    proposal: Proposal,
    within: float | None,
    accept_amendments: bool,
) -> Approved:
    """Wait for the decision, accepting amendments when asked to; ``NotApproved`` when
    not approved."""
    while True:
        outcome = await proposal.wait(within)
        if isinstance(outcome, Amended) and accept_amendments:
            await proposal.accept_amendment(outcome.payload_digest)
            continue
        if isinstance(outcome, Approved):
            return outcome
        raise NotApproved(outcome)


async def delivered(proposal: Proposal, within: float | None) -> Outcome:
    """How Signoff's delivery of an approved proposal ended (``Applied`` or ``Failed``)."""
    while True:
        outcome = await proposal.wait(within)
        if outcome.kind in FINAL_KINDS:
            return outcome


def refusal_text(outcome: Outcome) -> str:
    """A sentence for a model: the action was not approved, and why."""
    if isinstance(outcome, Rejected):
        who = f" by {outcome.rejected_by}" if outcome.rejected_by else ""
        why = f": {outcome.reason}" if outcome.reason else ""
        return f"Not done: the action was rejected{who}{why}."
    if isinstance(outcome, Amended):
        return "Not done: a reviewer amended the action; propose it again as amended."
    return f"Not done: the action was {outcome.kind} without approval."
