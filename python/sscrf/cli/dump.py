"""``sscrf dump``: a model's labels, sizes, largest state weights, transitions, start and end;
with ``--json``, all of it, machine-readable."""

from __future__ import annotations

import argparse
import heapq
import json
import math
import sys
from typing import Any, Sequence, TextIO

import numpy as np

from ..fit_callbacks import scoring_text
from .reading import load_model, model_columns

__all__ = ["run"]


#: The settings the text dump shows: c2 always, the others when not 0.
_WEIGHTS = ("c1", "c2", "entropy_weight", "proportion_weight", "ge_weight")


def _format_table(row_names: Sequence[str], column_names: Sequence[str],
                  rows: Sequence[Sequence[Any]]) -> list[str]:
    """Right-aligned table of floats with row and column headers."""
    cells = [[f"{v:+.4f}" for v in row] for row in rows]
    first = max([len(n) for n in row_names] + [0])
    width = max([len(n) for n in column_names] + [len(c) for row in cells for c in row] + [1])
    lines = [" " * first + "".join(f"  {n:>{width}}" for n in column_names)]
    for name, row in zip(row_names, cells):
        lines.append(f"{name:<{first}}" + "".join(f"  {c:>{width}}" for c in row))
    return lines


def run(args: argparse.Namespace) -> int:
    """``sscrf dump``: the exit status."""
    model = load_model(args.model)
    if args.json:
        _write_json(model, args.model, sys.stdout)
        return 0
    labels = list(model.classes_)
    S = len(labels)
    state = model.state_features_
    n_state_parameters = model.layout_.n_pairs
    extractor = model.extractor_
    out = []
    out.append(f"model: {args.model}")
    out.append(f"labels ({S}): {' '.join(labels)}")
    if extractor.templates is not None:
        out.append(f"templates: {len(extractor.templates)} unigram templates over "
                   f"{model_columns(model, args.model)} token column(s)")
    else:
        out.append("features: feature dicts")
    record = getattr(model, "representations_", None)
    if record:  # the file tag and eval look up, checked by its sha256
        out.append(f"representations: {record['path']} (sha256 {record['sha256'][:16]}...): "
                   f"{record['columns']} column(s) of cluster ids (and HMM states)")
    spec = getattr(extractor, "vector_spec_", None)
    if spec:
        out.append(f"word vectors: {spec['dim']} dimensions scaled by {spec['scale']:g}, "
                   f"as {spec['name']}0 to {spec['name']}{spec['dim'] - 1}")
    out.append(f"attributes: {len(extractor.attributes_ or [])}")
    out.append(f"parameters: {model.n_parameters_} ({n_state_parameters} state, {S * S} "
               f"transition, {2 * S} start/end); feature set: {model.feature_set_}")
    out.append(f"non-zero state features: {len(state)}")
    out.append("settings: " + ", ".join(
        f"{name}={getattr(model, name):g}" for name in _WEIGHTS
        if name == "c2" or getattr(model, name) != 0))
    training = getattr(model, "training_", {}) or {}
    if "iterations" in training:
        out.append(f"training: {training['iterations']} iterations, loss "
                   f"{training.get('loss', float('nan')):.6g} ({training.get('stop_reason', '?')})")
    dev = training.get("dev")
    if dev:
        scoring = scoring_text(dev.get("scoring"))
        out.append(f"dev: {scoring} {dev['best_score']:.4f}, the iterate of iteration "
                   f"{dev['best_iteration']} (scored every {dev['period']} iterations)")
    out.append("")
    top = heapq.nsmallest(args.top, state.items(), key=lambda kv: (-abs(kv[1]), kv[0]))
    out.append(f"top {len(top)} state features by |weight|:")
    if top:
        label_width = max(len("label"), *(len(label) for (_, label), _ in top))
        out.append(f"  {'weight':>10}  {'label':<{label_width}}  attribute")
        for (attribute, label), weight in top:
            out.append(f"  {weight:>+10.4f}  {label:<{label_width}}  {attribute}")
    out.append("")
    out.append("transitions (row: previous label, column: next label):")
    out.extend("  " + line for line in _format_table(labels, labels, model.transitions_.tolist()))
    out.append("")
    out.append("start and end weights:")
    out.extend("  " + line for line in _format_table(
        ["start", "end"], labels, [model.start_weights_.tolist(), model.end_weights_.tolist()]))
    print("\n".join(out))
    return 0


def _plain(value: Any) -> Any:
    """A training record's value as JSON holds it: arrays as lists, a non-finite
    float as the strings "nan", "inf", "-inf" (JSON has no such numbers)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _write_json(model: Any, path: str, out: TextIO) -> None:
    """Every label, attribute, state weight (zeros included: each stored
    attribute-label pair), transition, start and end weight, the templates and
    the training record, as one JSON object."""
    extractor = model.extractor_
    attributes = list(extractor.attributes_ or [])
    labels = list(model.classes_)
    layout = model.layout_
    weights = layout.split(model.coef_)[0].tolist()
    pairs = [[attributes[a], labels[l], w] for a, l, w in zip(
        layout.attribute_of_pairs().tolist(), model.label_ids_.tolist(), weights)]
    templates = None
    if extractor.templates is not None:
        templates = {"lines": list(extractor.templates.lines),
                     "n_columns": model_columns(model, path)}
    params = {k: v for k, v in model.get_params().items() if k != "templates"}
    document = {
        "model": str(path),
        "labels": labels,
        "attributes": attributes,
        "feature_set": model.feature_set_,
        "templates": templates,
        "representations": _plain(getattr(model, "representations_", None)),
        "word_vectors": _plain(getattr(extractor, "vector_spec_", None)),
        "state_features": pairs,
        "transitions": model.transitions_.tolist(),
        "start": model.start_weights_.tolist(),
        "end": model.end_weights_.tolist(),
        "parameters": _plain(params),
        "training": _plain(getattr(model, "training_", None) or {}),
    }
    json.dump(document, out, ensure_ascii=False, allow_nan=False)
    out.write("\n")
