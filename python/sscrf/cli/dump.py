"""``sscrf dump``: a model's labels, sizes, largest state weights, transitions, start and end."""

import heapq

from .reading import load_model, model_columns

__all__ = ["run"]


def _format_table(row_names, column_names, rows):
    """Right-aligned table of floats with row and column headers."""
    cells = [[f"{v:+.4f}" for v in row] for row in rows]
    first = max([len(n) for n in row_names] + [0])
    width = max([len(n) for n in column_names] + [len(c) for row in cells for c in row] + [1])
    lines = [" " * first + "".join(f"  {n:>{width}}" for n in column_names)]
    for name, row in zip(row_names, cells):
        lines.append(f"{name:<{first}}" + "".join(f"  {c:>{width}}" for c in row))
    return lines


def run(args):
    """``sscrf dump``: the exit status."""
    model = load_model(args.model)
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
    out.append(f"attributes: {len(extractor.attributes_ or [])}")
    out.append(f"parameters: {model.n_parameters_} ({n_state_parameters} state, {S * S} "
               f"transition, {2 * S} start/end); feature set: {model.feature_set_}")
    out.append(f"non-zero state features: {len(state)}")
    training = getattr(model, "training_", {}) or {}
    if "iterations" in training:
        out.append(f"training: {training['iterations']} iterations, loss "
                   f"{training.get('loss', float('nan')):.6g} ({training.get('stop_reason', '?')})")
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
