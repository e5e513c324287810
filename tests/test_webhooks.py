"""Standard Webhooks signing and ``signoff.webhooks.verify``."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from signoff.resolvers.targets.targets import new_signing_secret
from signoff.webhooks import WebhookVerificationError, sign, verify

BODY = b'{"action_id":"a-1"}'
NOW = 1_700_000_000


def test_signature_is_hmac_sha256_of_id_timestamp_body() -> None:
    secret = new_signing_secret()
    headers = sign(secret, "msg_a-1", NOW, BODY)
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = base64.b64encode(
        hmac.new(key, b"msg_a-1.%d." % NOW + BODY, hashlib.sha256).digest()
    ).decode()
    assert headers == {
        "webhook-id": "msg_a-1",
        "webhook-timestamp": str(NOW),
        "webhook-signature": f"v1,{expected}",
    }
    assert verify(secret, headers=headers, body=BODY, now=NOW) == "msg_a-1"


def test_header_names_are_case_insensitive_and_rotated_signatures_accepted() -> None:
    old, new = new_signing_secret(), new_signing_secret()
    headers = sign(new, "msg_a-1", NOW, BODY)
    both = f"{sign(old, 'msg_a-1', NOW, BODY)['webhook-signature']} {headers['webhook-signature']}"
    upper = {"Webhook-Id": "msg_a-1", "Webhook-Timestamp": str(NOW), "Webhook-Signature": both}
    assert verify(new, headers=upper, body=BODY, now=NOW) == "msg_a-1"


@pytest.mark.parametrize("tamper", ["body", "id", "timestamp", "secret", "missing", "stale"])
def test_anything_else_is_refused(tamper: str) -> None:
    secret = new_signing_secret()
    headers = sign(secret, "msg_a-1", NOW, BODY)
    body, now = BODY, float(NOW)
    if tamper == "body":
        body = BODY.replace(b"a-1", b"a-2")
    elif tamper == "id":
        headers["webhook-id"] = "msg_a-2"
    elif tamper == "timestamp":
        headers["webhook-timestamp"] = str(NOW + 1)
    elif tamper == "secret":
        secret = new_signing_secret()
    elif tamper == "missing":
        del headers["webhook-signature"]
    else:
        now = NOW + 301
    with pytest.raises(WebhookVerificationError):
        verify(secret, headers=headers, body=body, now=now)


def test_the_freshness_check_can_be_skipped_for_stored_requests() -> None:
    secret = new_signing_secret()
    headers = sign(secret, "msg_a-1", NOW, BODY)
    assert verify(secret, headers=headers, body=BODY, tolerance_seconds=None) == "msg_a-1"


def test_each_secret_signs_with_its_own_key_once_another_was_used() -> None:
    """The keyed HMAC is kept per secret (``webhooks._keyed``): after a rotation, the new
    secret's signatures are its own, and the old secret's are still the old key's."""
    old, new = new_signing_secret(), new_signing_secret()
    for secret in (old, new, old):
        headers = sign(secret, "msg_1", 1_700_000_000, BODY)
        key = base64.b64decode(secret.removeprefix("whsec_"))
        expected = hmac.new(key, b"msg_1.1700000000." + BODY, hashlib.sha256).digest()
        assert headers["webhook-signature"] == "v1," + base64.b64encode(expected).decode()
