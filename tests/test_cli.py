"""``signoff --help`` and each command's ``--help``: plain sentences, every command
summed up, each with a description of its own, and the defaults shown."""

from __future__ import annotations

import re
import tomllib

import pytest

from signoff import cli
from tests.processes import ROOT

COMMANDS = ["serve", "worker", "receiver", "migrate", "schema", "token", "actor", "audit"]
ACTIONS = [
    ["token", "create"],
    ["token", "revoke"],
    ["actor", "set-role"],
    ["actor", "disable"],
    ["actor", "enable"],
    ["actor", "link-slack"],
    ["audit", "public-key"],
    ["audit", "checkpoint"],
    ["audit", "export"],
    ["audit", "verify"],
    ["audit", "verify-receipt"],
]


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--help"])
    assert exited.value.code == 0
    out: str = capsys.readouterr().out
    return out


def _description(text: str) -> str:
    """What the help says between its usage and its list of arguments or options."""
    described = text.split("\n\n", 1)[1].split("\noptions:", 1)[0]
    return described.split("\npositional arguments:", 1)[0].strip()


def test_signoff_help_sums_up_every_command_in_plain_sentences(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _help(capsys)
    assert "``" not in text
    summary = _description(text)
    for command in COMMANDS:
        assert re.search(rf"\b{command}\b", summary), f"{command} is not summed up"
    for paragraph in summary.split("\n\n"):
        assert paragraph.endswith("."), f"a paragraph stops mid-way: {paragraph!r}"
    # The settings' page, by a path that exists in the repository (as published).
    [page] = re.findall(r"docs/[\w-]+\.md", " ".join(summary.split()))
    assert page == "docs/configuration.md" and (ROOT / page).exists()


@pytest.mark.parametrize("argv", [[c] for c in COMMANDS] + ACTIONS, ids=" ".join)
def test_each_command_has_a_description_of_its_own(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    text = _help(capsys, *argv)
    assert "``" not in text
    description = _description(text)
    assert description and description[0].isupper() and description.endswith("."), text


@pytest.mark.parametrize(
    ("argv", "defaults"),
    [
        (["serve"], ["address to listen on (default: SIGNOFF_HOST, else 127.0.0.1)"]),
        (["serve"], ["port to listen on (default: SIGNOFF_PORT, else 8000)"]),
        (["receiver"], ["(default: 127.0.0.1)", "(default: 9000)", "(default: 200)"]),
        (["receiver"], ["(default: SIGNOFF_RECEIVER_SECRET;"]),
        (["token", "create"], ["(repeatable; default: none)"]),
    ],
)
def test_options_with_defaults_show_them(
    capsys: pytest.CaptureFixture[str], argv: list[str], defaults: list[str]
) -> None:
    text = " ".join(_help(capsys, *argv).split())  # however wide the terminal wraps it
    for default in defaults:
        assert default in text, text


def test_mcp_help_says_how_to_install_the_client_from_this_repository(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = " ".join(_help(capsys, "mcp").split())
    assert "pip install './clients/python[mcp]'" in text
    assert "from a checkout of the Signoff repository" in text
    assert "signoff-client[mcp]" not in text  # no such package on PyPI


def test_the_client_installs_no_command_named_like_another_project() -> None:
    """``signoff-mcp`` is someone else's package on PyPI: a desktop configuration or
    ``uvx signoff-mcp`` could run it. The client's names are its own."""
    pyproject = tomllib.loads((ROOT / "clients" / "python" / "pyproject.toml").read_text())
    assert pyproject["project"]["name"] == "signoff-approvals-client"
    assert set(pyproject["project"]["scripts"]) == {"signoff-approvals-mcp"}
