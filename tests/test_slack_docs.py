"""docs/slack.md as printed: its app manifest names Signoff's interactivity endpoint and
the scopes the Slack app calls need, and its shell example links a Slack user."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

from signoff.web.slack_actions import ACTIONS_PATH
from tests.conftest import checked_once
from tests.processes import ROOT
from tests.readme_shell import commands, page, sh_blocks

pytestmark = checked_once

YAML_FENCE = re.compile(r"^```yaml\n(?P<body>.*?)^```$", re.M | re.S)


def test_the_manifests_point_slack_at_signoff_with_the_scopes_used() -> None:
    """The first manifest sends clicks to the actions endpoint; the second, Socket Mode's,
    names no URL: Signoff connects."""
    manifests = [yaml.safe_load(m["body"]) for m in YAML_FENCE.finditer(page("docs/slack.md"))]
    [http, socket] = manifests
    interactivity = http["settings"]["interactivity"]
    assert interactivity["is_enabled"] is True
    assert interactivity["request_url"].endswith(ACTIONS_PATH)
    assert http["settings"]["socket_mode_enabled"] is False
    assert socket["settings"]["interactivity"] == {"is_enabled": True}
    assert socket["settings"]["socket_mode_enabled"] is True
    for manifest in manifests:
        scopes = set(manifest["oauth_config"]["scopes"]["bot"])
        assert scopes == {"chat:write", "users:read", "users:read.email"}


def test_the_link_slack_example_runs_as_printed(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
        "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'signoff.db'}",
        "SIGNOFF_LOG_FORMAT": "text",
    }
    [block] = sh_blocks(page("docs/slack.md"))
    outputs = [
        subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        for command in commands(block)
    ]
    assert outputs[-1] == "Slack user U0123ABCDEF now decides as alice.\n"
