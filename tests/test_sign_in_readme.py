"""The README's "Sign-in" section, run as printed: the test provider started with the
printed command, ``signoff serve`` with the printed settings, and the machine client's
``curl`` commands, their answer as printed. Only the ports change (9400 and 8000 become
free ones), as in the other examples."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Awaitable, Callable

from signoff.oidc_settings import load_claim_mapping
from tests.live import Server
from tests.machine import require_node_package
from tests.oidc.provider import PROVIDER_DIR
from tests.processes import ROOT, free_port, signoff_env
from tests.readme_shell import Shell, commands, page_section, sh_blocks

Serve = Callable[..., Awaitable[Server]]
SECTION = "## Sign-in"


def _settings(block: str, ports: dict[int, int]) -> dict[str, str]:
    """The ``SIGNOFF_*`` assignments before ``make serve``, ports replaced."""
    for printed, free in ports.items():
        block = block.replace(f"127.0.0.1:{printed}", f"127.0.0.1:{free}")
    words = shlex.split(block.replace("\\\n", " "))
    assert words[-2:] == ["make", "serve"], words
    return dict(word.split("=", 1) for word in words[:-2])


def test_the_printed_mapping_is_the_example_file() -> None:
    text = page_section("README.md", SECTION)
    printed = re.search(r"```text\n(groups-claim.*?)```", text, re.S)
    assert printed is not None
    example = ROOT / "tests" / "oidc_provider" / "claims.txt"
    lines = [line for line in example.read_text().splitlines() if not line.startswith("#")]
    assert printed.group(1).splitlines() == lines
    assert len(load_claim_mapping(str(example)).grants) == 4


async def test_the_sign_in_example_runs_as_printed(serve: Serve, database_url: str) -> None:
    provider, settings, client = sh_blocks(page_section("README.md", SECTION))
    # `make test` has run npm ci there (its NODE_PACKAGES): it is not run again.
    install, start_provider = commands(provider)
    assert install == "(cd tests/oidc_provider && npm ci)"
    require_node_package(PROVIDER_DIR, "oidc-provider")
    port = free_port()
    ports = {9400: free_port(), 8000: port}
    shell = Shell(signoff_env(database_url), ports=ports)
    with shell.background(start_provider):
        env = _settings(settings, ports)
        assert env["SIGNOFF_OIDC_CLAIMS_FILE"] == "tests/oidc_provider/claims.txt"
        env["SIGNOFF_OIDC_CLAIMS_FILE"] = str(ROOT / env["SIGNOFF_OIDC_CLAIMS_FILE"])
        await serve(SIGNOFF_PORT=str(port), **env)
        take_token, call = commands(client)
        await shell.run(take_token)
        answer = await shell.run(call)
    said = re.search(r"It prints `(.*?)`", page_section("README.md", SECTION))
    assert said is not None
    assert answer == json.loads(said.group(1))["data"]
