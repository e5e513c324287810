from __future__ import annotations

import stat
from pathlib import Path

import pytest

from signoff.sealing import Sealer, SealingError, decode_key, load_sealer, new_key_text


def test_a_sealed_secret_opens_with_its_key_only() -> None:
    sealer = Sealer(decode_key(new_key_text()))
    sealed = sealer.seal("whsec_abc")
    assert sealed.startswith("sealed:v1:") and "whsec_abc" not in sealed
    assert sealer.open(sealed) == "whsec_abc"
    assert sealer.seal("whsec_abc") != sealed  # a fresh nonce every time
    with pytest.raises(SealingError, match="SIGNOFF_SECRET_KEY"):
        Sealer(decode_key(new_key_text())).open(sealed)


def test_tampering_and_plaintext_are_refused() -> None:
    sealer = Sealer(decode_key(new_key_text()))
    sealed = sealer.seal("whsec_abc")
    tampered = sealed[:-4] + ("AAAA" if not sealed.endswith("AAAA") else "BBBB")
    with pytest.raises(SealingError):
        sealer.open(tampered)
    with pytest.raises(SealingError, match="not sealed"):
        sealer.open("whsec_abc")


def test_a_key_file_is_made_once_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "signoff.key"
    first = load_sealer(None, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_sealer(None, path).key == first.key
    assert load_sealer(new_key_text(), path).key != first.key


@pytest.mark.parametrize("text", ["not base64!", "c2hvcnQ="])
def test_a_malformed_key_is_refused(text: str) -> None:
    with pytest.raises(SealingError):
        decode_key(text)
