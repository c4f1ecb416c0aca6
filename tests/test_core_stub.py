"""The _core.pyi stub names exactly what the compiled module exports."""

import ast
import pathlib

import sscrf
from sscrf import _core


def _stub_names():
    stub = pathlib.Path(sscrf.__file__).with_name("_core.pyi")
    tree = ast.parse(stub.read_text())
    names = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    return names | {node.target.id for node in tree.body if isinstance(node, ast.AnnAssign)}


def test_stub_matches_module():
    exported = {name for name in dir(_core) if not name.startswith("_")}
    assert _stub_names() == exported


def test_build_info_reports_openmp_and_threads():
    info = sscrf.build_info()
    assert isinstance(info["openmp"], bool)
    assert info["max_threads"] >= 1
    assert info["kernels"] in {"x86-64-v3", "baseline", "native"}
