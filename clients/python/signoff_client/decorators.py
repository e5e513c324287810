"""``@requires_approval``: a function whose call is proposed first and runs only once
approved, with the arguments as approved (an accepted amendment's, if one was made).

For a target Signoff delivers itself (``delivered=True``), the function's body is not
run: the delivery is Signoff's, and the call returns how it ended (``Applied``,
``Failed``, ``Rejected``, ...).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from signoff_client.client import AsyncSignoff, Signoff
from signoff_client.errors import SignoffError
from signoff_client.outcomes import Amended, Approved, Outcome
from signoff_client.proposals import Proposal

F = TypeVar("F", bound=Callable[..., Any])


class NotApproved(SignoffError):
    """The call was not approved: ``outcome`` is the ``Rejected``, ``Expired`` or (when
    amendments are not accepted) ``Amended`` that ended it."""

    code = "NOT_APPROVED"

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(f"Proposal {outcome.proposal_id} was {outcome.kind}.")
        self.outcome = outcome


def payload_of(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments by name, defaults filled in: the payload proposed."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def requires_approval(
    *,
    target: str,
    client: Signoff | AsyncSignoff | None = None,
    action: str | None = None,
    subject: Any = None,
    timeout: float | None = None,
    delivered: bool = False,
    accept_amendments: bool = False,
) -> Callable[[F], F]:
    """Propose each call to ``target`` and go on only once approved.

    The payload is the call's arguments by name, and the operation key is derived from
    it, so a call retried after a crash proposes once. ``client`` defaults to one made
    from ``SIGNOFF_URL`` and ``SIGNOFF_TOKEN`` (sync for a plain function, async for a
    coroutine function). ``subject`` defaults to ``{"function": <qualified name>}``."""

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        name = f"{function.__module__}.{function.__qualname__}"
        what = subject if subject is not None else {"function": name}
        act = action or function.__name__

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                signoff = client if isinstance(client, AsyncSignoff) else AsyncSignoff.from_env()
                payload = payload_of(signature, args, kwargs)
                made = await signoff.propose(target, payload, subject=what, action=act)
                outcome = await decide(made, timeout, delivered, accept_amendments)
                if delivered:
                    return outcome
                return await function(**approved_arguments(outcome))

            return cast(F, run_async)

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            signoff = client if isinstance(client, Signoff) else Signoff.from_env()
            try:
                payload = payload_of(signature, args, kwargs)
                made = signoff.propose(target, payload, subject=what, action=act)
                outcome = signoff._portal.call(
                    decide, made.proposal, timeout, delivered, accept_amendments
                )
            finally:
                if client is None:
                    signoff.close()
            if delivered:
                return outcome
            return function(**approved_arguments(outcome))

        return cast(F, run)

    return decorate


async def decide(
    proposal: Proposal, within: float | None, delivered: bool, accept_amendments: bool
) -> Outcome:
    """Wait for the decision (for ``delivered``, for the delivery's end too), accepting
    amendments when asked to; ``NotApproved`` when not approved (and not ``delivered``)."""
    while True:
        outcome = await proposal.wait(within)
        if isinstance(outcome, Amended) and accept_amendments:
            await proposal.accept_amendment(outcome.payload_digest)
            continue
        if isinstance(outcome, Approved) and delivered:
            continue
        if isinstance(outcome, Approved) or delivered:
            return outcome
        raise NotApproved(outcome)


def approved_arguments(outcome: Outcome) -> dict[str, Any]:
    assert isinstance(outcome, Approved), outcome
    return dict(outcome.payload)
