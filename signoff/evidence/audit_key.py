"""The Ed25519 key that signs the audit log's checkpoints.

Configured like the sealing key: ``SIGNOFF_AUDIT_SIGNING_KEY`` (base64 of a 32-byte
seed), or a key file beside the database, created on first use. Every process sharing a
database must sign with the same key; a start with another is refused (docs/design.md
section 15).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from sqlalchemy.engine import make_url

from signoff.evidence import sealing
from signoff.evidence.verify import PUBLIC_KEY_PREFIX

ENV_SOURCE = "SIGNOFF_AUDIT_SIGNING_KEY"
KEY_FILE_NAME = "signoff-audit.key"


@dataclass(frozen=True)
class Signer:
    """Signs checkpoints; ``public_key`` is the text auditors verify with."""

    sign: Callable[[bytes], bytes] = field(repr=False)
    public_key: str
    source: str = ENV_SOURCE

    @property
    def key_id(self) -> str:
        return key_id(self.public_key)

    @property
    def check_value(self) -> str:
        """What the database records of the key: SHA-256 of the public key's text."""
        return hashlib.sha256(self.public_key.encode()).hexdigest()


def key_id(public_key: str) -> str:
    """A short name for a public key: the first 8 bytes of SHA-256 of its text, in hex."""
    return hashlib.sha256(public_key.encode()).hexdigest()[:16]


def signer_of(seed: bytes, source: str = ENV_SOURCE) -> Signer:
    private = Ed25519PrivateKey.from_private_bytes(seed)
    raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return Signer(private.sign, PUBLIC_KEY_PREFIX + base64.b64encode(raw).decode(), source)


def default_key_file(database_url: str) -> Path:
    """Beside a SQLite database's file; in the working directory for a server database."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return Path(str(url.database)).parent / KEY_FILE_NAME
    return Path(KEY_FILE_NAME)


def load_signer(key_text: str | None, key_file: Path) -> Signer:
    """The signer of this process: from the key given, or from (a new) key file."""
    if key_text:
        return signer_of(_decode(key_text, ENV_SOURCE))
    try:
        created = sealing.create_key_file(key_file)
        text = key_file.read_text()
    except OSError as exc:
        raise sealing.SealingError(
            f"The audit key file {key_file.resolve()} cannot be read or created: "
            f"{exc.strerror}; set SIGNOFF_AUDIT_SIGNING_KEY or SIGNOFF_AUDIT_SIGNING_KEY_FILE."
        ) from None
    source = f"the audit key file {key_file.resolve()}" + (" (created just now)" if created else "")
    return signer_of(_decode(text, source), source)


def _decode(text: str, source: str) -> bytes:
    try:
        return sealing.decode_key(text, source)
    except sealing.SealingError:
        raise sealing.SealingError(
            f"The audit signing key in {source} must be base64 of a 32-byte Ed25519 seed."
        ) from None
