"""Copy the README's sections (and BENCHMARKS.md) into the documentation pages that show
them, so a page reads the same on GitHub, in the repository and on the site.

A page marks each copy with two comments; the text between them is the source's:

    <!-- copied from README.md, section "two-commands": edit it there, then make docs-copies -->
    ...
    <!-- end of the copy -->

A section of the README lies between ``<!-- --8<-- [start:NAME] -->`` and
``<!-- --8<-- [end:NAME] -->``; without a section, the whole file is copied. ``--check``
changes nothing and exits 1 naming each page whose copy is stale (``make docs`` runs it).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPY = re.compile(
    r'(?P<start><!-- copied from (?P<source>[\w./-]+)(?:, section "(?P<section>[\w-]+)")?'
    r": edit it there, then make docs-copies -->\n)"
    r"(?P<text>.*?)"
    r"(?P<end><!-- end of the copy -->)",
    re.S,
)


def source_text(source: str, section: str | None) -> str:
    """The text a copy must hold: ``source``'s ``section``, or all of ``source``."""
    text = (ROOT / source).read_text()
    if section is None:
        return text if text.endswith("\n") else text + "\n"
    marked = re.search(
        rf"<!-- --8<-- \[start:{section}\] -->\n(.*?)<!-- --8<-- \[end:{section}\] -->",
        text,
        re.S,
    )
    if marked is None:
        raise SystemExit(f"copy_docs: {source} has no section {section!r}")
    return marked.group(1)


def refreshed(page: str) -> str:
    """``page`` with every copy it marks replaced by its source's text as it is now."""

    def fill(found: re.Match[str]) -> str:
        return found["start"] + source_text(found["source"], found["section"]) + found["end"]

    return COPY.sub(fill, page)


def stale_pages(docs: Path) -> list[Path]:
    """The pages whose copies differ from their sources."""
    return [
        path
        for path in sorted(docs.glob("*.md"))
        if refreshed(path.read_text()) != path.read_text()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; fail on a stale copy")
    args = parser.parse_args(argv)
    docs = ROOT / "docs"
    stale = stale_pages(docs)
    if args.check:
        for path in stale:
            print(
                f"copy_docs: {path.relative_to(ROOT)} is stale: run make docs-copies",
                file=sys.stderr,
            )
        return 1 if stale else 0
    for path in stale:
        path.write_text(refreshed(path.read_text()))
        print(f"copy_docs: {path.relative_to(ROOT)} copied again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
