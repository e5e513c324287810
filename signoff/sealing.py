"""Encryption at rest for the secrets Signoff must read back: webhook signing secrets.

Tokens are hashed; signing secrets cannot be, because every delivery signs with
them. They are sealed with AES-256-GCM under a key that never enters the
database, so a copy of the database alone reveals no secret. The key comes from
``SIGNOFF_SECRET_KEY`` (base64, 32 bytes); without it, a key file beside the
working directory (``SIGNOFF_SECRET_KEY_FILE``, default ``./signoff.key``) is
created on first use, readable by its owner only. Processes that share a
database must share the key.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "sealed:v1:"
KEY_BYTES = 32
NONCE_BYTES = 12
# Binds each ciphertext to its purpose: a sealed value cannot be replayed elsewhere.
ASSOCIATED_DATA = b"signoff:target-signing-secret"


class SealingError(Exception):
    """The key is malformed, or a sealed value does not open with this key."""


@dataclass(frozen=True)
class Sealer:
    key: bytes

    def seal(self, plaintext: str) -> str:
        nonce = os.urandom(NONCE_BYTES)
        sealed = AESGCM(self.key).encrypt(nonce, plaintext.encode(), ASSOCIATED_DATA)
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode()

    def open(self, stored: str) -> str:
        if not stored.startswith(PREFIX):
            raise SealingError("The stored value is not sealed.")
        try:
            raw = base64.urlsafe_b64decode(stored[len(PREFIX) :])
            plaintext = AESGCM(self.key).decrypt(
                raw[:NONCE_BYTES], raw[NONCE_BYTES:], ASSOCIATED_DATA
            )
        except (InvalidTag, binascii.Error, ValueError):
            raise SealingError(
                "A sealed secret does not open with this key; is SIGNOFF_SECRET_KEY the one "
                "the secret was sealed with?"
            ) from None
        return plaintext.decode()


def decode_key(text: str) -> bytes:
    try:
        key = base64.urlsafe_b64decode(text.strip() + "=" * (-len(text.strip()) % 4))
    except (binascii.Error, ValueError):
        raise SealingError("SIGNOFF_SECRET_KEY is not base64.") from None
    if len(key) != KEY_BYTES:
        raise SealingError(f"SIGNOFF_SECRET_KEY must decode to {KEY_BYTES} bytes.")
    return key


def new_key_text() -> str:
    return base64.urlsafe_b64encode(os.urandom(KEY_BYTES)).decode()


def load_sealer(key_text: str | None, key_file: Path) -> Sealer:
    """The sealer for this process: from the key given, or from (a new) key file."""
    if key_text:
        return Sealer(decode_key(key_text))
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return Sealer(decode_key(key_file.read_text()))
    with os.fdopen(fd, "w") as handle:
        handle.write(new_key_text() + "\n")
    return Sealer(decode_key(key_file.read_text()))
