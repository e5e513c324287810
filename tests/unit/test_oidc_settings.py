"""``SIGNOFF_OIDC_*`` and the claim mapping file: read and checked at start, every error
naming its line; with ``SIGNOFF_OIDC_ISSUER`` unset nothing changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from signoff.config import Settings
from signoff.models import Role
from signoff.oidc_settings import ClaimMappingError, parse_claim_mapping

MAPPING = """\
# Who is who in Signoff
groups-claim groups
signoff-payments-reviewers  reviewer  payments
signoff-refunds-reviewers   reviewer  refunds  payments-eu
signoff-operators           operator
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    claims = tmp_path / "claims.txt"
    claims.write_text(MAPPING)
    return {
        "SIGNOFF_OIDC_ISSUER": "https://id.example.com/",
        "SIGNOFF_OIDC_CLIENT_ID": "signoff",
        "SIGNOFF_OIDC_CLAIMS_FILE": str(claims),
        **extra,
    }


def test_without_an_issuer_nothing_changes() -> None:
    settings = Settings.from_env({})
    assert settings.oidc is None
    assert settings.console_token_sign_in


def test_the_audience_defaults_to_the_client_id_and_sessions_to_an_hour(tmp_path: Path) -> None:
    settings = Settings.from_env(_env(tmp_path))
    assert settings.oidc is not None
    # Kept as given: tokens' iss must equal it exactly (discovery is read without the slash).
    assert settings.oidc.issuer == "https://id.example.com/"
    assert settings.oidc.audience == "signoff"
    assert settings.oidc.session_seconds == 3600
    # With a provider, pasting a token in the console is off unless the operator allows it.
    assert not settings.console_token_sign_in
    allowed = Settings.from_env(_env(tmp_path, SIGNOFF_CONSOLE_TOKEN_SIGN_IN="1"))
    assert allowed.console_token_sign_in


def test_the_audience_and_session_length_can_be_set(tmp_path: Path) -> None:
    env = _env(
        tmp_path, SIGNOFF_OIDC_AUDIENCE="https://signoff.example", SIGNOFF_OIDC_SESSION_SECONDS="60"
    )
    oidc = Settings.from_env(env).oidc
    assert oidc is not None
    assert (oidc.audience, oidc.session_seconds) == ("https://signoff.example", 60)


@pytest.mark.parametrize(
    ("missing", "named"),
    [("SIGNOFF_OIDC_CLIENT_ID", "SIGNOFF_OIDC_CLIENT_ID"), ("SIGNOFF_OIDC_CLAIMS_FILE", "CLAIMS")],
)
def test_an_issuer_needs_a_client_and_a_mapping(tmp_path: Path, missing: str, named: str) -> None:
    env = _env(tmp_path)
    del env[missing]
    with pytest.raises(ValueError, match=named):
        Settings.from_env(env)


def test_groups_map_to_a_role_and_queues() -> None:
    mapping = parse_claim_mapping(MAPPING)
    grant = mapping.grant({"groups": ["signoff-refunds-reviewers", "signoff-payments-reviewers"]})
    assert grant is not None
    # The first matching line decides the role; the queues are every matching line's.
    assert grant.role == Role.REVIEWER
    assert grant.queues == {"payments", "refunds", "payments-eu"}
    operator = mapping.grant({"groups": "signoff-operators"})
    assert operator is not None and operator.role == Role.OPERATOR and not operator.queues
    assert mapping.grant({"groups": ["marketing"]}) is None
    assert mapping.grant({}) is None


def test_the_display_name_is_the_first_display_claim_there() -> None:
    mapping = parse_claim_mapping(MAPPING + "name-claims email sub\n")
    assert mapping.display_name({"sub": "u1", "email": "ada@example.com"}) == "ada@example.com"
    assert mapping.display_name({"sub": "u1"}) == "u1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a reviewer payments\nb reviwer payments\n", r"line 2: 'reviwer' is not a role"),
        ("a reviewer Payments!\n", r"line 1: 'Payments!' is not a queue slug"),
        ("a reviewer\n\n# c\na operator\n", r"line 4: group a is mapped already on line 1"),
        ("groups-claim\na reviewer\n", r"line 1: groups-claim takes exactly one claim"),
        ("lonely\n", r"line 1: group lonely needs a role"),
        ("# nothing\n", r"no group is mapped"),
    ],
)
def test_a_mapping_error_names_its_line(text: str, message: str) -> None:
    with pytest.raises(ClaimMappingError, match=message):
        parse_claim_mapping(text, "claims.txt")


def test_signoff_refuses_to_start_with_a_bad_mapping(tmp_path: Path) -> None:
    env = _env(tmp_path)
    Path(env["SIGNOFF_OIDC_CLAIMS_FILE"]).write_text("signoff-x reviewer\nsignoff-y root\n")
    done = subprocess.run(
        [sys.executable, "-m", "signoff", "serve"],
        env={**os.environ, **env, "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path}/s.db"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: {env['SIGNOFF_OIDC_CLAIMS_FILE']} line 2: 'root' is not a role "
        "(agent, reviewer, operator, integration, admin)"
    )
