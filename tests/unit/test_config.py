"""``SIGNOFF_PUBLIC_URL``: where approval links in notifications point."""

from __future__ import annotations

import pytest

from signoff.config import Settings


def test_the_public_url_defaults_to_the_api_address() -> None:
    settings = Settings.from_env({"SIGNOFF_HOST": "127.0.0.2", "SIGNOFF_PORT": "9000"})
    assert settings.public_base_url == "http://127.0.0.2:9000"


def test_the_public_url_keeps_a_prefix_without_its_trailing_slash() -> None:
    settings = Settings.from_env({"SIGNOFF_PUBLIC_URL": "https://signoff.example/review/"})
    assert settings.public_base_url == "https://signoff.example/review"


@pytest.mark.parametrize("value", ["signoff.example", "ftp://signoff.example", "https:///x"])
def test_a_public_url_that_is_not_one_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="SIGNOFF_PUBLIC_URL"):
        Settings.from_env({"SIGNOFF_PUBLIC_URL": value})
