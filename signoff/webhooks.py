"""Standard Webhooks signatures: how Signoff signs a delivery, and how a receiver checks it.

A receiver needs only this module and the target's ``whsec_`` secret: ``verify`` checks a
request's signature and freshness (else ``WebhookVerificationError``) and returns its
``webhook-id``, the same on every attempt at a proposal and so the receiver's
deduplication key (docs/design.md section 4.7; docs/delivery.md shows a receiver).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import time
from collections.abc import Mapping

from signoff.constants import (
    SIGNING_KEYS_CACHED,
    SIGNING_SECRET_PREFIX,
    WEBHOOK_TOLERANCE_SECONDS,
)

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"


class WebhookVerificationError(Exception):
    """The request is not a genuine, fresh delivery signed with this secret."""


def _key(secret: str) -> bytes:
    encoded = secret.removeprefix(SIGNING_SECRET_PREFIX)
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise WebhookVerificationError("The signing secret is not valid base64.") from None


@functools.lru_cache(maxsize=SIGNING_KEYS_CACHED)
def _keyed(secret: str) -> hmac.HMAC:
    """An HMAC-SHA256 keyed with ``secret``'s key, to copy for each message: the secret is
    decoded and the key's pads hashed once per process, not once a request. Cached by the
    secret itself, so a rotated secret is another entry, never the old key."""
    return hmac.new(_key(secret), digestmod=hashlib.sha256)


def signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256 of "id.timestamp.body">``."""
    mac = _keyed(secret).copy()
    mac.update(f"{msg_id}.{timestamp}.".encode())
    mac.update(body)
    return "v1," + base64.b64encode(mac.digest()).decode()


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body``."""
    return {
        ID_HEADER: msg_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, msg_id, timestamp, body),
    }


def verify(
    secret: str,
    *,
    headers: Mapping[str, str],
    body: bytes,
    tolerance_seconds: float | None = WEBHOOK_TOLERANCE_SECONDS,
    now: float | None = None,
) -> str:
    """Check the signature and the timestamp's freshness; return the ``webhook-id``.

    ``headers`` may be any mapping (header names are matched case-insensitively).
    ``tolerance_seconds=None`` skips the freshness check (for replaying stored requests).
    Raises ``WebhookVerificationError`` on any problem.
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    msg_id = lowered.get(ID_HEADER)
    stamp = lowered.get(TIMESTAMP_HEADER)
    signatures = lowered.get(SIGNATURE_HEADER)
    if not msg_id or not stamp or not signatures:
        raise WebhookVerificationError("Missing webhook-id, webhook-timestamp or signature.")
    try:
        timestamp = int(stamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not an integer.") from None
    if tolerance_seconds is not None:
        current = time.time() if now is None else now
        if abs(current - timestamp) > tolerance_seconds:
            raise WebhookVerificationError("webhook-timestamp is outside the tolerance.")
    expected = signature(secret, msg_id, timestamp, body).encode()
    # The header may carry several space-separated signatures (secret rotation).
    if not any(
        hmac.compare_digest(expected, candidate.encode())
        for candidate in signatures.split(" ")
        if candidate
    ):
        raise WebhookVerificationError("No signature matches.")
    return msg_id
