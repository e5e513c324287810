"""Encryption at rest for the secrets Signoff must read back: webhook signing secrets.

Tokens are hashed; signing secrets cannot be, since every delivery signs with them, so
they are sealed with AES-256-GCM under a key that never enters the database. Processes that
share a database must share the key, and refuse to start with another (docs/design.md
section 10).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "sealed:v1:"
KEY_BYTES = 32
NONCE_BYTES = 12
# Binds each ciphertext to its purpose: a sealed value cannot be replayed elsewhere.
ASSOCIATED_DATA = b"signoff:target-signing-secret"
# HMAC-SHA256 of this label under the key identifies the key without revealing it.
KEY_CHECK_LABEL = b"signoff:secret-key-check:v1"
ENV_SOURCE = "SIGNOFF_SECRET_KEY"


class SealingError(Exception):
    """The key is malformed, or a sealed value does not open with this key."""


@dataclass(frozen=True)
class Sealer:
    key: bytes = field(repr=False)
    # Where the key came from, for messages that must say which key is wrong.
    source: str = ENV_SOURCE

    def check_value(self) -> str:
        """A value that is the same for the same key and tells nothing about the key."""
        return hmac.new(self.key, KEY_CHECK_LABEL, hashlib.sha256).hexdigest()

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


def decode_key(text: str, source: str = ENV_SOURCE) -> bytes:
    try:
        key = base64.urlsafe_b64decode(text.strip() + "=" * (-len(text.strip()) % 4))
    except (binascii.Error, ValueError):
        raise SealingError(f"The secret key in {source} is not base64.") from None
    if len(key) != KEY_BYTES:
        raise SealingError(f"The secret key in {source} must be base64 of {KEY_BYTES} bytes.")
    return key


def new_key_text() -> str:
    return base64.urlsafe_b64encode(os.urandom(KEY_BYTES)).decode()


def load_sealer(key_text: str | None, key_file: Path) -> Sealer:
    """The sealer for this process: from the key given, or from (a new) key file."""
    if key_text:
        return Sealer(decode_key(key_text))
    try:
        created = create_key_file(key_file)
        text = key_file.read_text()
    except OSError as exc:
        raise SealingError(
            f"The key file {key_file.resolve()} cannot be read or created: {exc.strerror}; "
            "set SIGNOFF_SECRET_KEY or SIGNOFF_SECRET_KEY_FILE."
        ) from None
    source = f"the key file {key_file.resolve()}" + (" (created just now)" if created else "")
    return Sealer(decode_key(text, source), source)


def create_key_file(path: Path) -> bool:
    """Create the key file unless it exists; whether this call created it.

    The key is written to a temporary file first and then linked into place, so the
    file never exists half-written; linking fails if another process linked its key
    first, and then both use that one.
    """
    if path.exists():
        return False
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(new_key_text() + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)  # unlike a rename, never replaces a key already there
        except FileExistsError:
            return False
    finally:
        temporary.unlink()
    _sync_directory(path.parent)
    return True


def _sync_directory(directory: Path) -> None:
    """Make the new file's name durable: a key lost in a crash loses every sealed secret."""
    with contextlib.suppress(OSError):  # not every platform or file system allows it
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
