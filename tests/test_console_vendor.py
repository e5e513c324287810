"""The console's vendored Preact and htm (``signoff/static/vendor``) are the files its README
names: same version, same digest, licences beside them, and nothing in them that a strict
Content Security Policy would refuse (no ``eval``, no ``new Function``)."""

from __future__ import annotations

import hashlib
import re

from tests.processes import ROOT

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


def test_the_console_page_preloads_every_module_it_imports() -> None:
    console = ROOT / "signoff" / "static" / "console"
    page = (console / "index.html").read_text(encoding="utf-8")
    preloaded = set(re.findall(r'<link rel="modulepreload" href="/static/([^"]+)"', page))
    modules = {
        str(path.relative_to(ROOT / "signoff" / "static"))
        for path in console.rglob("*.js")
        if path.name not in {"app.js", "sign-in-failed.js"}
    }
    assert preloaded == modules | {"vendor/preact-htm.module.js"}
