"""Small checks on scalar input fields, each refusing with ``VALIDATION_FAILED``."""

from __future__ import annotations

import re

from signoff.errors import ValidationFailed


def require_text(value: str, field: str, min_chars: int, max_chars: int) -> str:
    value = value.strip()
    if not min_chars <= len(value) <= max_chars:
        raise ValidationFailed(
            f"{field} must be {min_chars} to {max_chars} characters.", field=field
        )
    return value


# A plain identifier (``refund.create``, ``payouts:send_batch``): an action code is shown
# to reviewers in Slack and pages, so it carries no markup, spaces or punctuation to
# dress it as something else.
ACTION_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,199}")


def require_action_code(value: str) -> str:
    """An action code: a letter, then letters, digits, ``_ . : -``, 200 characters at most."""
    value = value.strip()
    if ACTION_CODE.fullmatch(value) is None:
        raise ValidationFailed(
            "actionCode must be a plain identifier like refund.create: a letter, then "
            "letters, digits, '_', '.', ':' or '-', 200 characters at most.",
            field="actionCode",
        )
    return value


def optional_text(value: str | None, field: str, min_chars: int, max_chars: int) -> str | None:
    return None if value is None else require_text(value, field, min_chars, max_chars)


def require_range(value: int | None, field: str, low: int, high: int, default: int) -> int:
    if value is None:
        return default
    if not low <= value <= high:
        raise ValidationFailed(f"{field} must be between {low} and {high}.", field=field)
    return value
