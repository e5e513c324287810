"""The documentation site (``mkdocs.yml``, ``docs/``) builds offline with no warning, and
the README stays a landing page: its first commands are the two the Makefile serves, and
every file it links to exists.

The site's examples are run where they are printed by ``tests/test_readme.py`` and the
tests it names; ``--strict`` here fails on a broken link or anchor, or a page left out of
the nav. Pages that show a README section hold a copy of it (``tools/copy_docs.py``), so
they read the same on GitHub as on the site.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.processes import ROOT
from tests.readme_shell import page, page_section, sh_blocks
from tools.copy_docs import COPY, stale_pages

README_AT_MOST = 300  # lines: what it is, a picture, two commands, a walk-through, links
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
AS = re.compile(r"^As [\w-]+ \((?:agent|reviewer|operator|integration|admin)\):$", re.M)


def test_the_site_builds_offline_with_no_warning(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert not [line for line in output.splitlines() if line.startswith("WARNING")], output
    # "Getting started" prints the README's worked example, every block of it.
    started = (site / "getting-started" / "index.html").read_text()
    walkthrough = page_section("README.md", "## A worked example in GraphiQL")
    says = AS.findall(walkthrough)
    assert len(says) == 7
    at = 0
    for line in says:
        at = started.find(f"<p>{line}</p>", at) + 1
        assert at, f"the site's Getting started has no {line!r} where the README has it"


def test_the_readme_is_a_landing_page_with_the_two_commands_first() -> None:
    readme = page("README.md")
    assert readme.count("\n") <= README_AT_MOST
    first = sh_blocks(readme)[0]
    assert [line.split("#")[0].strip() for line in first.splitlines()] == [
        "make serve",
        "make test",
    ]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^serve:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


def test_every_file_the_readme_links_to_exists() -> None:
    """GitHub renders the README's relative links; MkDocs does not check them."""
    for match in LINK.finditer(page("README.md")):
        target = match["target"].split("#")[0]
        if target and not re.match(r"\w+:", target):
            assert (ROOT / target).exists(), f"README.md links to {target}, which is not there"


def test_every_page_reads_the_same_in_the_repository_as_on_the_site() -> None:
    """No include marker a reader of the repository would see raw, and every copy of a
    README section (or BENCHMARKS.md) is its source as it is now."""
    docs = ROOT / "docs"
    for path in docs.glob("*.md"):
        assert '--8<-- "' not in path.read_text(), f"{path.name} includes a file"
    assert stale_pages(docs) == [], "run make docs-copies"
    copies = [
        found["source"] for path in docs.glob("*.md") for found in COPY.finditer(path.read_text())
    ]
    assert sorted(copies) == ["BENCHMARKS.md", "README.md", "README.md", "README.md"]


def test_files_the_readmes_commands_write_are_ignored_by_git() -> None:
    """A reader runs the README's commands in the repository: what they write (``> FILE``)
    must not show up as changes to commit."""
    written = {
        target
        for block in sh_blocks(page("README.md"))
        for target in re.findall(r">\s*([\w.-]+)\s*$", block, re.M)
    }
    assert {"checkpoint.json", "log.jsonl", "audit.pub", "receipt.json"} <= written
    ignored = subprocess.run(
        ["git", "check-ignore", *sorted(written)], cwd=ROOT, capture_output=True, text=True
    )
    assert sorted(ignored.stdout.split()) == sorted(written)
