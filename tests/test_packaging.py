"""Packaging: one version source, the license, py.typed, the extras CI installs."""

import re
import sys
from pathlib import Path

import sscrf
from sscrf.cli import main

ROOT = Path(__file__).resolve().parent.parent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - tomllib is new in 3.11
    tomllib = None


def pyproject():
    text = (ROOT / "pyproject.toml").read_text()
    return tomllib.loads(text) if tomllib else None, text


def test_the_version_is_written_once_and_read_by_the_build():
    data, text = pyproject()
    init = (ROOT / "python" / "sscrf" / "__init__.py").read_text()
    # The regex scikit-build-core's provider uses by default.
    written = re.findall(r'^__version__\s*=\s*["\']([^"\']+)["\']', init, re.M)
    assert written == [sscrf.__version__]
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+|rc\d+)?", sscrf.__version__)
    assert not re.search(r'^version\s*=', text, re.M), "a second version in pyproject.toml"
    if data is not None:
        assert data["project"]["dynamic"] == ["version"]
        assert "version" not in data["project"]
        metadata = data["tool"]["scikit-build"]["metadata"]["version"]
        assert metadata["provider"] == "scikit_build_core.metadata.regex"
        assert metadata["input"] == "python/sscrf/__init__.py"


def test_cli_version_is_the_package_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"sscrf {sscrf.__version__}"


def test_license_and_py_typed_are_there():
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License")
    assert "Copyright (c) 2026 the sscrf developers" in license_text
    assert (Path(sscrf.__file__).parent / "py.typed").is_file()


def test_metadata_classifiers_and_extras():
    data, text = pyproject()
    if data is None:
        assert "Typing :: Typed" in text and "License :: OSI Approved :: MIT License" in text
        return
    project = data["project"]
    assert "License :: OSI Approved :: MIT License" in project["classifiers"]
    assert "Typing :: Typed" in project["classifiers"]
    assert "urls" not in project  # none until real ones exist
    extras = project["optional-dependencies"]
    assert any(d.startswith("matplotlib") for d in extras["plot"])
    # sscrf.plot's tests must run, not skip, in CI, which installs the test extra
    assert any(d.startswith("matplotlib") for d in extras["test"])
    assert {d.split(">")[0] for d in extras["docs"]} == {"sphinx", "numpydoc", "myst-parser"}
    assert any(d.startswith("mypy") for d in extras["typing"])


def test_changelog_has_the_current_version_or_unreleased():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (.+)$", changelog, re.M)
    assert headings[0] == "Unreleased" or headings[0].startswith(sscrf.__version__)
    assert any(h.startswith("0.1.0") for h in headings)
