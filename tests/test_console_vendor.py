"""The console's vendored Preact and htm (``signoff/static/vendor``) are the files its README
names: same version, same digest, licences beside them, and nothing in them that a strict
Content Security Policy would refuse (no ``eval``, no ``new Function``)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tests.conftest import checked_once
from tests.processes import ROOT

pytestmark = checked_once

VENDOR = ROOT / "signoff" / "static" / "vendor"
README = (VENDOR / "README.md").read_text(encoding="utf-8")
BUNDLE = VENDOR / "preact-htm.module.js"


def test_the_bundle_is_the_file_and_version_the_readme_names() -> None:
    digest = hashlib.sha256(BUNDLE.read_bytes()).hexdigest()
    assert f"{digest}  preact-htm.module.js" in README
    versions = set(re.findall(r"htm@(\d+\.\d+\.\d+)", README))
    assert len(versions) == 1, versions
    (version,) = versions
    # The update command packs the same version the table names.
    assert f"npm pack htm@{version} " in README
    assert f"htm-{version}.tgz" in README


def test_the_licences_are_shipped_beside_it() -> None:
    assert "Apache License" in (VENDOR / "LICENSE.htm").read_text(encoding="utf-8")
    assert "MIT License" in (VENDOR / "LICENSE.preact").read_text(encoding="utf-8")


def test_the_bundle_needs_no_eval_and_exports_what_the_console_imports() -> None:
    text = BUNDLE.read_text(encoding="utf-8")
    assert not re.search(r"\beval\(|new Function\(", text)
    exports = set(re.findall(r"\bas (\w+)", text.rsplit("export{", 1)[1]))
    assert {"html", "render", "h", "useState", "useEffect", "useRef"} <= exports
    imported = set()
    for module in (ROOT / "signoff" / "static" / "console").rglob("*.js"):
        for names in re.findall(
            r"import \{([^}]*)\} from \"[./]*vendor/preact-htm\.module\.js\"",
            module.read_text(encoding="utf-8"),
        ):
            imported |= {name.strip() for name in names.split(",") if name.strip()}
        for names in re.findall(
            r"export \{([^}]*)\} from \"[./]*vendor/preact-htm\.module\.js\"",
            module.read_text(encoding="utf-8"),
        ):
            imported |= {name.strip() for name in names.split(",") if name.strip()}
    assert imported, "no console module imports the vendored bundle"
    assert imported <= exports, imported - exports


STATIC = ROOT / "signoff" / "static"
STATIC_IMPORT = re.compile(r'^(?:import|export)\b[^;]*?\bfrom "([^"]+)";', re.M | re.S)
DYNAMIC_IMPORT = re.compile(r'\bimport\("([^"]+)"\)')


def _imports(module: Path, pattern: re.Pattern[str]) -> set[Path]:
    return {
        (module.parent / name).resolve()
        for name in pattern.findall(module.read_text(encoding="utf-8"))
    }


def _reachable(start: set[Path]) -> set[Path]:
    """Every module the static imports of ``start`` bring in, ``start`` included."""
    seen: set[Path] = set()
    waiting = set(start)
    while waiting:
        module = waiting.pop()
        seen.add(module)
        waiting |= _imports(module, STATIC_IMPORT) - seen
    return seen


def _names(modules: set[Path]) -> set[str]:
    return {str(path.relative_to(STATIC.resolve())) for path in modules}


def test_the_console_page_preloads_what_its_first_screen_imports_and_no_more() -> None:
    """The first screen's modules are fetched at once (no waterfall of imports); the views
    loaded when their route opens (``import()`` in app.js) are not, nor what only they use."""
    app = (STATIC / "console" / "app.js").resolve()
    page = (STATIC / "console" / "index.html").read_text(encoding="utf-8")
    preloaded = set(re.findall(r'<link rel="modulepreload" href="/static/([^"]+)"', page))
    # start.js is a classic script the page runs before any module (it sends the first
    # requests); modules take what it offers from `window.signoffStart`, never import it.
    classic = set(re.findall(r'<script src="/static/([^"]+)"', page))
    assert classic == {"console/start.js"}
    first = _reachable({app}) - {app}
    assert preloaded == _names(first)
    later = _reachable(_imports(app, DYNAMIC_IMPORT)) - first
    assert {"console/views/admin.js", "vendor/uPlot.esm.js"} <= _names(later)
    every = {p.resolve() for p in (STATIC / "console").rglob("*.js")}
    every -= {app, *((STATIC / name).resolve() for name in classic)}
    every -= {(STATIC / "console" / "sign-in-failed.js").resolve()}
    assert every <= first | later, "a console module nothing imports"


UPLOT = ("uPlot.esm.js", "uPlot.min.css")


def test_uplot_is_the_files_and_version_the_readme_names() -> None:
    for name in UPLOT:
        digest = hashlib.sha256((VENDOR / name).read_bytes()).hexdigest()
        assert f"{digest}  {name}" in README
    (version,) = set(re.findall(r"uplot@(\d+\.\d+\.\d+)", README))
    assert f"(v{version})" in (VENDOR / "uPlot.esm.js").read_text(encoding="utf-8")[:400]
    assert f"npm pack uplot@{version} " in README
    assert f"uplot-{version}.tgz" in README
    assert "MIT License" in (VENDOR / "LICENSE.uplot").read_text(encoding="utf-8")


def test_uplot_needs_no_eval_and_writes_no_style_attribute() -> None:
    """Under the pages' CSP a ``style`` attribute or element could be refused; uPlot sets
    styles through the CSSOM, which the policy does not govern."""
    text = (VENDOR / "uPlot.esm.js").read_text(encoding="utf-8")
    assert not re.search(r"\beval\(|new Function\(|setAttribute\(|innerHTML|cssText", text)
    assert "export { uPlot as default };" in text
