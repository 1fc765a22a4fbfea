"""One version everywhere: the workspace's (Cargo.toml [workspace.package]) is
``zkrecipes.__version__``, the installed distribution's (maturin stamps it from the same
Cargo.toml), the C header's macros and the Node package's."""

from __future__ import annotations

import json
import re
from importlib import metadata

import zkrecipes
from conftest import REPO


def workspace_version() -> str:
    toml = (REPO / "Cargo.toml").read_text()
    section = toml.split("[workspace.package]", 1)[1].split("\n[", 1)[0]
    m = re.search(r'^version = "([^"]+)"$', section, re.M)
    assert m, "no version in [workspace.package] of Cargo.toml"
    return m.group(1)


def test_every_face_reports_the_workspace_version() -> None:
    want = workspace_version()
    assert zkrecipes.__version__ == want
    assert metadata.version("zkrecipes") == want
    header = (REPO / "include" / "zkrecipes.h").read_text()

    def macro(name: str) -> str:
        m = re.search(rf"^#define {name} (\S+)$", header, re.M)
        assert m, f"no {name} in include/zkrecipes.h"
        return m.group(1)

    assert macro("ZKR_VERSION_STRING") == f'"{want}"'
    parts = [macro("ZKR_VERSION_MAJOR"), macro("ZKR_VERSION_MINOR"), macro("ZKR_VERSION_PATCH")]
    assert ".".join(parts) == re.split(r"[-+]", want)[0]
    package_json = json.loads((REPO / "bindings-node" / "package.json").read_text())
    assert package_json["version"] == want
