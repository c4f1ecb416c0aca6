"""The package's import graph, read from the source with ``ast``: no loops, no private names.

Every import counts, at the top of a module or inside a function (an import
inside a function that would close a loop is still a loop). A module may not
import another module's private (``_underscore``) name, as ``from .x import
_y`` or as ``x._y`` on an imported module; the compiled ``_core`` is the one
private module every layer may use.
"""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "python" / "sscrf"
ROOT = "sscrf"
ALLOWED_PRIVATE_MODULES = {"sscrf._core"}


def _modules():
    """Dotted name → (path, is_package) of every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join([ROOT, *parts])] = (path, is_package)
    if (PACKAGE / "_core.pyi").exists():
        out["sscrf._core"] = (PACKAGE / "_core.pyi", False)
    return out


def _resolve(name, modules):
    """The longest prefix of ``name`` that is a module of the package (or None)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _imports(module, path, is_package, modules):
    """(edges, private uses): the package modules ``module`` imports, and the private
    names it takes from other modules, as (line, text)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if is_package else module.rpartition(".")[0]
    edges, private = set(), []
    bound = {}  # local name -> package module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, modules)
                if target is None:
                    continue
                edges.add(target)
                if alias.asname:
                    bound[alias.asname] = target
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            source_module = _resolve(source, modules)
            if source_module is None:
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in modules:  # from . import x: the module x
                    edges.add(submodule)
                    bound[alias.asname or alias.name] = submodule
                    continue
                edges.add(source_module)
                if (alias.name.startswith("_") and not alias.name.startswith("__")
                        and source_module not in ALLOWED_PRIVATE_MODULES
                        and source_module != module):
                    private.append((node.lineno, f"from {source_module} import {alias.name}"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and bound[node.value.id] not in ALLOWED_PRIVATE_MODULES
                and f"{bound[node.value.id]}.{node.attr}" not in modules):
            private.append((node.lineno, f"{bound[node.value.id]}.{node.attr}"))
    edges.discard(module)
    return edges, private


def _graph():
    modules = _modules()
    graph, private = {}, {}
    for module, (path, is_package) in modules.items():
        if path.suffix != ".py":
            graph[module] = set()
            continue
        graph[module], found = _imports(module, path, is_package, modules)
        if found:
            private[module] = found
    return graph, private


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read():
    graph, _ = _graph()
    assert "sscrf.model" in graph and "sscrf.training" in graph["sscrf.model"]
    assert "sscrf.errors" in graph["sscrf.inputs"]


def test_no_import_loop():
    graph, _ = _graph()
    cycles = _cycles(graph)
    assert not cycles, "import loops: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_module_imports_another_modules_private_names():
    _, private = _graph()
    listed = [f"{module}:{line}: {text}" for module, found in sorted(private.items())
              for line, text in found]
    assert not listed, "private names imported across modules:\n" + "\n".join(listed)


def test_the_checker_finds_a_loop_and_a_private_name(tmp_path, monkeypatch):
    package = tmp_path / "sscrf"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from .b import g\n")
    (package / "b.py").write_text("from . import a\nfrom .c import _hidden\n\ndef g():\n"
                                  "    return a._secret\n")
    (package / "c.py").write_text("_hidden = 1\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", package)
    graph, private = _graph()
    assert _cycles(graph) == [["sscrf.a", "sscrf.b"]]
    assert sorted(text for _, text in private["sscrf.b"]) == ["from sscrf.c import _hidden",
                                                             "sscrf.a._secret"]


def test_names_that_moved_are_importable_from_their_old_modules():
    import sscrf
    from sscrf import annotations, corpus, decoding, inputs, objectives, optim, optimize, partial
    from sscrf import serialization, training
    from sscrf.nbest import labelings_with_log_p, nbest_from_model

    for name in ("Alternatives", "SentenceMasks", "check_annotation", "corpus_masks",
                 "count_labelings", "is_complete", "label_view", "sentence_masks"):
        assert getattr(partial, name) is getattr(annotations, name)
    assert partial.compile_corpus is corpus.compile_corpus
    assert partial.subset_features is corpus.subset_features
    assert partial.AlternativesLikelihood is objectives.AlternativesLikelihood
    assert objectives.OBJECTIVES["alternatives"] is objectives.AlternativesLikelihood
    assert partial.labeled_terms is training.labeled_terms
    for name in optimize.__all__:
        assert getattr(optimize, name) is getattr(optim, name)
    assert serialization.check_writable is inputs.check_writable
    assert labelings_with_log_p is decoding.labelings_with_log_p and callable(nbest_from_model)
    assert sscrf.SscrfError is sscrf.errors.SscrfError
