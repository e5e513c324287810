"""CHANGELOG.md names every breaking change: each one graphql-core finds between the
schema baseline and ``schema.graphql``, and each event kind of the baseline that is no
longer published, must be named under "Unreleased"."""

from __future__ import annotations

import re

import graphql
from graphql import BreakingChange, find_breaking_changes

from signoff.models import ChangeKind
from tests.processes import ROOT

CHANGELOG = ROOT / "CHANGELOG.md"
SCHEMA = ROOT / "schema.graphql"
SCHEMA_BASELINE = ROOT / "docs" / "schema-baseline.graphql"
EVENTS_BASELINE = ROOT / "docs" / "events-baseline.txt"


def unreleased(changelog: str) -> str:
    """The text of the "Unreleased" section."""
    start = changelog.index("\n## Unreleased\n")
    following = changelog.find("\n## ", start + 1)
    return changelog[start : following if following != -1 else None]


def subject(change: BreakingChange) -> str:
    """What a changelog entry must name: ``Type.field`` (or ``Enum.VALUE``), else ``Type``."""
    # graphql-core's descriptions: "Field Query.f was removed.", "Argument Query.f(a:) has
    # changed type ...", "Enum value Role.X was removed.", "Gone was removed." (a type).
    dotted = re.search(r"\b([_A-Za-z]\w*\.[_A-Za-z]\w*)", change.description)
    return dotted[1] if dotted else change.description.split()[0]


def unnamed_schema_changes(baseline: str, current: str, changelog: str) -> list[str]:
    """The breaking changes from ``baseline`` to ``current`` that Unreleased does not name."""
    changes = find_breaking_changes(graphql.build_schema(baseline), graphql.build_schema(current))
    section = unreleased(changelog)
    return [c.description for c in changes if f"`{subject(c)}`" not in section]


def unnamed_retired_events(baseline: list[str], current: set[str], changelog: str) -> list[str]:
    section = unreleased(changelog)
    return [kind for kind in baseline if kind not in current and f"`{kind}`" not in section]


def test_every_breaking_schema_change_is_in_the_changelog() -> None:
    missing = unnamed_schema_changes(
        SCHEMA_BASELINE.read_text(), SCHEMA.read_text(), CHANGELOG.read_text()
    )
    assert not missing, f"name these under Unreleased in CHANGELOG.md: {missing}"


def test_every_event_kind_no_longer_published_is_in_the_changelog() -> None:
    baseline = EVENTS_BASELINE.read_text().split()
    assert baseline == sorted(baseline)
    missing = unnamed_retired_events(
        baseline, {kind.value for kind in ChangeKind}, CHANGELOG.read_text()
    )
    assert not missing, f"name these under Unreleased in CHANGELOG.md: {missing}"


CHANGELOG_TEXT = """# Changelog

## Unreleased

- `Query.gone` was removed; `Role.GUEST` too; `Gone` is no more. `old.kind` retired.

## 2026-01-01

- `Query.other` was removed long ago.
"""
BASELINE = """
type Query { gone: Int, kept: Int, other: Int, typed: Int, gone2: Gone }
type Gone { a: Int }
enum Role { ADMIN GUEST }
type Mutation { role: Role }
"""


def test_the_check_finds_each_kind_of_unnamed_change() -> None:
    current = """
    type Query { kept: Int, typed: String, gone2: Int }
    enum Role { ADMIN }
    type Mutation { role: Role }
    """
    assert unnamed_schema_changes(BASELINE, current, CHANGELOG_TEXT) == [
        "Field Query.other was removed.",  # named, but under an older release
        "Field Query.typed changed type from Int to String.",
        "Field Query.gone2 changed type from Gone to Int.",
    ]
    assert unnamed_schema_changes(BASELINE, BASELINE, CHANGELOG_TEXT) == []
    assert unnamed_retired_events(
        ["new.kind", "old.kind", "x.y"], {"new.kind"}, CHANGELOG_TEXT
    ) == ["x.y"]
