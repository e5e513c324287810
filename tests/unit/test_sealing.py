from __future__ import annotations

import stat
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

from signoff.evidence import sealing
from signoff.evidence.sealing import Sealer, SealingError, decode_key, load_sealer, new_key_text


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


def test_a_malformed_key_file_is_refused_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "signoff.key"
    path.write_text("c2hvcnQ=\n")
    with pytest.raises(SealingError) as refused:
        load_sealer(None, path)
    assert str(refused.value) == (
        f"The secret key in the key file {path.resolve()} must be base64 of 32 bytes."
    )


def test_a_key_file_being_written_by_another_process_is_never_read_half_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first process is slow to make its key; the second must not read a partial file."""
    path = tmp_path / "signoff.key"
    first_is_making_its_key = threading.Event()
    second_has_its_key = threading.Event()
    make_key = sealing.new_key_text

    def slow_first_key() -> str:
        if not first_is_making_its_key.is_set():
            first_is_making_its_key.set()
            assert second_has_its_key.wait(timeout=10)
        return make_key()

    monkeypatch.setattr(sealing, "new_key_text", slow_first_key)
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(load_sealer, None, path)
        assert first_is_making_its_key.wait(timeout=10)
        try:
            second = load_sealer(None, path)
        finally:
            second_has_its_key.set()
        assert first.result(timeout=10).key == second.key
    assert decode_key(path.read_text()) == second.key
    assert [p.name for p in tmp_path.iterdir()] == ["signoff.key"]  # no temporary file left


def _key_of(path: str) -> bytes:
    return load_sealer(None, Path(path)).key


def test_processes_starting_at_once_end_up_with_one_key(tmp_path: Path) -> None:
    path = tmp_path / "signoff.key"
    with ProcessPoolExecutor(max_workers=4, mp_context=get_context("spawn")) as pool:
        keys = set(pool.map(_key_of, [str(path)] * 16))
    assert keys == {decode_key(path.read_text())}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_key_file_that_cannot_be_made_is_refused_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "missing-directory" / "signoff.key"
    with pytest.raises(SealingError, match=r"missing-directory/signoff\.key cannot be"):
        load_sealer(None, path)


def test_the_key_check_value_identifies_a_key_without_revealing_it() -> None:
    text = new_key_text()
    sealer = Sealer(decode_key(text))
    assert sealer.check_value() == Sealer(decode_key(text)).check_value()
    assert sealer.check_value() != Sealer(decode_key(new_key_text())).check_value()
    assert text.rstrip("=") not in sealer.check_value()
    assert text not in repr(sealer) and repr(sealer.key) not in repr(sealer)
