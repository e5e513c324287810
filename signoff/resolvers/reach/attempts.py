"""How one attempt to send a notification ended, whatever carried it (HTTP, Slack's Web
API, SMTP)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Attempt:
    """``error_code`` ``None``: sent. ``retry_after``: seconds the receiver asked us to wait
    (Slack's ``Retry-After``). ``posted``: the Slack channel and ``ts`` of a message posted."""

    error_code: str | None = None
    retry_after: float | None = None
    posted: tuple[str, str] | None = None


SENT = Attempt()
