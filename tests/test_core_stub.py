"""The _core.pyi stub names exactly what the compiled module exports."""

import ast
import pathlib

import numpy as np
import pytest

import sscrf
from sscrf import _core
from sscrf.errors import SscrfError


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


def test_core_refuses_bad_input_with_sscrf_error():
    # one exception type, translated once in the module: what the binding
    # checks and what the kernels find both arrive as SscrfError
    with pytest.raises(SscrfError, match="transitions must have shape"):
        _core.log_partition(np.zeros((2, 2)), np.zeros((3, 3)))
    with pytest.raises(SscrfError, match="allow no labeling"):
        _core.log_partition(np.zeros((2, 2)), np.zeros((2, 2)), mask=np.zeros((2, 2), bool))
    with pytest.raises(SscrfError, match="too large"):
        _core.nbest(np.zeros((40, 22)), np.zeros((22, 22)), 10**6)
    with pytest.raises(SscrfError, match="method must be"):
        _core.entropy_gradient(np.zeros((2, 2)), np.zeros((2, 2)), method="slow")
