"""Pictures of what sscrf records: learning curves, dev scores, confusions, losses.

Each function returns a :class:`matplotlib.figure.Figure` and, given
``path``, also writes it there as a PNG. Figures are drawn on matplotlib's
Agg canvas directly (``Figure`` + ``FigureCanvasAgg``, never ``pyplot``):
no display is needed, no window opens, and the user's pyplot state and
backend are left as they were. In a notebook, a returned figure shows as
the cell's value.

Needs matplotlib: ``pip install 'sscrf[plot]'``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from .errors import SscrfError, SscrfTypeError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["confusion_matrix", "hyperparameter_curve", "learning_curve", "read_training_log",
           "training_loss"]

PathLike = Union[str, "os.PathLike[str]"]

#: One point of a learning curve, as :func:`sscrf.active.simulate` records it.
CurvePoint = Mapping[str, Any]

#: What a model-selection row records besides hyperparameters and scores.
_RECORDS = frozenset({"iterations", "evaluations", "seconds", "loss", "stop_reason"})

#: A line of ``sscrf train``'s progress on stderr: ``iter  10  loss 252.119 ...``.
_LOG_LINE = re.compile(r"^\s*iter\s+(\d+)\s+loss\s+(\S+)")
#: ``stage 2/2: adding the entropy term ...``: a training's next stage begins.
_STAGE_LINE = re.compile(r"^stage (\d+)/\d+:")


def _new_figure(width: float = 6.4, height: float = 4.2) -> Figure:
    """A figure on its own Agg canvas, or a clear error without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise SscrfError("sscrf.plot needs matplotlib: pip install 'sscrf[plot]'") from None
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _finish(figure: Figure, path: Optional[PathLike]) -> Figure:
    if path is not None:
        figure.savefig(os.fspath(path), format="png", dpi=100)
    return figure


def _points(curve: Any, what: str) -> list[Mapping[str, Any]]:
    if isinstance(curve, (str, bytes, Mapping)) or not isinstance(curve, Iterable):
        raise SscrfTypeError(f"{what} must be a list of dicts (one per round), not "
                             f"{type(curve).__name__}")
    points = list(curve)
    for i, point in enumerate(points):
        if not isinstance(point, Mapping):
            raise SscrfTypeError(f"{what}[{i}] must be a dict, not {type(point).__name__}")
    return points


def learning_curve(history: Union[Sequence[CurvePoint], Mapping[str, Sequence[CurvePoint]]], *,
                   x: str = "sentences", y: str = "score", path: Optional[PathLike] = None,
                   title: Optional[str] = None) -> Figure:
    """An active-learning curve: score against the labeling effort.

    Parameters
    ----------
    history : list of dict, or dict of str to list of dict
        One curve, as :func:`sscrf.active.simulate` returns it (one dict per
        round, with ``sentences``, ``partial``, ``tokens`` and ``score``), or
        several, keyed by the name to show in the legend (one per strategy,
        say).
    x : str
        The key on the horizontal axis: ``"sentences"`` (default) or
        ``"tokens"``.
    y : str
        The key on the vertical axis (default ``"score"``).
    path : str or path-like, optional
        Where to write the figure as a PNG.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    SscrfError
        If matplotlib is missing, a curve is empty, or a point lacks ``x``
        or ``y``.
    """
    curves = (dict(history) if isinstance(history, Mapping)
              else {"": history})
    if not curves:
        raise SscrfError("history holds no curve")
    figure = _new_figure()
    axes = figure.add_subplot()
    for name, curve in curves.items():
        points = _points(curve, f"history[{name!r}]" if name else "history")
        if not points:
            raise SscrfError(f"history{f'[{name!r}]' if name else ''} has no points")
        for i, point in enumerate(points):
            for key in (x, y):
                if key not in point:
                    raise SscrfError(f"history point {i} has no {key!r} (keys: "
                                     f"{', '.join(map(str, point))})")
        axes.plot([p[x] for p in points], [p[y] for p in points], marker="o", markersize=3,
                  label=name or None)
    axes.set_xlabel(f"labeled {x}")
    axes.set_ylabel(y)
    axes.grid(True, alpha=0.3)
    if len(curves) > 1 or "" not in curves:
        axes.legend()
    axes.set_title(title or "active learning")
    return _finish(figure, path)


def hyperparameter_curve(table: Sequence[Mapping[str, Any]], param: str, *,
                         score: str = "dev_score", by: Optional[Sequence[str]] = None,
                         log: Optional[bool] = None,
                         path: Optional[PathLike] = None, title: Optional[str] = None) -> Figure:
    """The dev score against one hyperparameter, from a model-selection table.

    Parameters
    ----------
    table : list of dict
        One row per trained model, with the hyperparameter names and
        ``score`` (as model selection records them; other records of a row,
        such as ``iterations`` and ``seconds``, are ignored). Rows that
        differ in other hyperparameters than ``param`` are drawn as separate
        lines, labeled with those values.
    param : str
        The hyperparameter on the horizontal axis (``"c2"``,
        ``"entropy_weight"``, ...). Its values must be numbers.
    score : str
        The key of the score (default ``"dev_score"``).
    by : list of str, optional
        The other hyperparameters that separate lines; by default every key
        of a row but ``param``, ``score``, the training's records
        (``iterations``, ``evaluations``, ``seconds``, ``loss``,
        ``stop_reason``) and other scores (keys ending in ``score``).
    log : bool, optional
        A logarithmic horizontal axis; by default when every value is
        positive and they span more than a factor of 20 (a grid of c2 or γ).
    path : str or path-like, optional
        Where to write the figure as a PNG.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    SscrfError
        If matplotlib is missing, the table is empty, or a row lacks
        ``param`` or ``score`` or holds a value that is not a number.
    """
    rows = _points(table, "table")
    if not rows:
        raise SscrfError("the table has no rows")
    lines: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
    for i, row in enumerate(rows):
        for key in (param, score):
            if key not in row:
                raise SscrfError(f"table row {i} has no {key!r} (keys: "
                                 f"{', '.join(map(str, row))})")
        try:
            value, result = float(row[param]), float(row[score])
        except (TypeError, ValueError):
            raise SscrfError(f"table row {i}: {param!r} and {score!r} must be numbers, not "
                             f"{row[param]!r} and {row[score]!r}") from None
        others = tuple(sorted((str(k), str(v)) for k, v in row.items() if (
            k in by if by is not None else
            k not in (param, score) and k not in _RECORDS and not str(k).endswith("score"))))
        lines.setdefault(others, []).append((value, result))
    # Keys whose value is the same on every row say nothing in a legend.
    varying = {k for others in lines for k, v in others
               if any(dict(o).get(k) != v for o in lines)}
    xs = [v for line in lines.values() for v, _ in line]
    if log is None:
        log = min(xs) > 0 and max(xs) / min(xs) > 20
    figure = _new_figure()
    axes = figure.add_subplot()
    for others, line in lines.items():
        line.sort()
        name = ", ".join(f"{k}={v}" for k, v in others if k in varying)
        axes.plot([v for v, _ in line], [s for _, s in line], marker="o", markersize=4,
                  label=name or None)
    if log:
        axes.set_xscale("log")
    if any(k in varying for others in lines for k, _ in others):
        axes.legend(fontsize="small")
    axes.set_xlabel(param)
    axes.set_ylabel(score)
    axes.grid(True, alpha=0.3)
    axes.set_title(title or f"{score} against {param}")
    return _finish(figure, path)


def _flat(labels: Any, what: str) -> list[str]:
    """Labels of sentences (lists of lists) or of tokens (a flat list)."""
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        raise SscrfTypeError(f"{what} must be a list of labels or of label lists, not "
                             f"{type(labels).__name__}")
    flat: list[str] = []
    for item in labels:
        if isinstance(item, str):
            flat.append(item)
        elif isinstance(item, Iterable):
            flat.extend(str(label) for label in item)
        else:
            flat.append(str(item))
    return flat


def confusion_matrix(y_true: Sequence[Any], y_pred: Sequence[Any],
                     labels: Optional[Sequence[str]] = None, *, normalize: bool = True,
                     path: Optional[PathLike] = None, title: Optional[str] = None) -> Figure:
    """A confusion matrix of gold against predicted labels, token by token.

    Parameters
    ----------
    y_true, y_pred : list of label lists, or list of str
        Gold and predicted labels, per sentence (as ``CRF.predict`` returns
        them) or already flat; the same number of tokens in each.
    labels : list of str, optional
        The rows and columns, in this order; by default every label seen,
        sorted. Tokens whose gold or predicted label is not listed are left
        out.
    normalize : bool
        Colour each cell by its share of the row (the gold label's recall on
        the diagonal); the cells show the counts either way.
    path : str or path-like, optional
        Where to write the figure as a PNG.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    SscrfError
        If matplotlib is missing, the two hold different numbers of tokens,
        or no token is left to count.
    """
    gold, predicted = _flat(y_true, "y_true"), _flat(y_pred, "y_pred")
    if len(gold) != len(predicted):
        raise SscrfError(f"y_true has {len(gold)} tokens but y_pred has {len(predicted)}")
    names = sorted(set(gold) | set(predicted)) if labels is None else [str(v) for v in labels]
    if not names:
        raise SscrfError("no labels to show: y_true and y_pred are empty")
    index = {name: i for i, name in enumerate(names)}
    counts = np.zeros((len(names), len(names)), dtype=np.int64)
    for g, p in zip(gold, predicted):
        if g in index and p in index:
            counts[index[g], index[p]] += 1
    if counts.sum() == 0:
        raise SscrfError("no token has both labels among `labels`")
    shown = counts.astype(float)
    if normalize:
        shown /= np.maximum(counts.sum(axis=1, keepdims=True), 1)
    size = max(4.0, min(12.0, 1.0 + 0.5 * len(names)))
    figure = _new_figure(size + 1.2, size)
    axes = figure.add_subplot()
    image = axes.imshow(shown, cmap="Blues", vmin=0.0, interpolation="nearest")
    figure.colorbar(image, ax=axes, label="share of the gold label" if normalize else "tokens")
    axes.set_xticks(range(len(names)), names, rotation=90 if len(names) > 6 else 0)
    axes.set_yticks(range(len(names)), names)
    axes.set_xlabel("predicted")
    axes.set_ylabel("gold")
    if len(names) <= 20:  # beyond that the numbers no longer fit their cells
        top = shown.max()
        for i in range(len(names)):
            for j in range(len(names)):
                axes.text(j, i, str(counts[i, j]), ha="center", va="center", fontsize="small",
                          color="white" if shown[i, j] > 0.5 * top else "black")
    accuracy = np.trace(counts) / counts.sum()
    axes.set_title(title or f"confusion matrix (accuracy {100 * accuracy:.2f}%)")
    return _finish(figure, path)


def _loss_stages(record: Any) -> list[tuple[str, list[float]]]:
    """(stage name, losses) of a model, its ``training_``, a training log or a list."""
    if hasattr(record, "training_"):
        record = record.training_
    if hasattr(record, "iterations") and not isinstance(record, Mapping):  # CRF.training_log_
        return [("", [float(it["loss"]) for it in record.iterations])]
    if isinstance(record, Mapping):
        if record.get("history") is None:
            raise SscrfError("the training record holds no loss history (a model read from a "
                             "file keeps none); plot the model fit in this session, or the "
                             "progress log of 'sscrf train' (sscrf.plot.read_training_log)")
        stages = []
        for name, stage in (record.get("stages") or {}).items():
            if stage.get("history"):
                stages.append((str(name), [float(v) for v in stage["history"]]))
        last = "with the unlabeled terms" if stages else ""
        stages.append((last, [float(v) for v in record["history"]]))
        return stages
    if isinstance(record, Iterable) and not isinstance(record, (str, bytes)):
        return [("", [float(v) for v in record])]
    raise SscrfTypeError(f"training_loss needs a fitted CRF, its training_ record, its "
                         f"training_log_ or a list of losses, not {type(record).__name__}")


def training_loss(model_or_record: Any, *, log: bool = False, path: Optional[PathLike] = None,
                  title: Optional[str] = None, names: Optional[Sequence[str]] = None
                  ) -> Figure:
    """The training loss after each iteration.

    Parameters
    ----------
    model_or_record : CRF, dict, TrainingLog, list of float or list of (int, float)
        A CRF fitted in this session (model files keep no loss history), its
        ``training_`` record, its ``training_log_``, the losses themselves
        (one per iteration), or ``(iteration, loss)`` pairs as
        :func:`read_training_log` reads them from ``sscrf train``'s
        progress. A two-stage training (the supervised start of entropy
        regularisation or GE) is drawn as two segments, numbered on. Pairs
        whose iteration starts again from a lower one are another training
        (the settings of ``sscrf train --dev`` with several values), each
        drawn as its own line.
    log : bool
        A logarithmic vertical axis (losses that drop by orders of magnitude).
    path : str or path-like, optional
        Where to write the figure as a PNG.
    title : str, optional
    names : list of str, optional
        With ``(iteration, loss)`` pairs of several trainings, the legend's
        name of each (default: ``training 1``, ``training 2``, ...).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    SscrfError
        If matplotlib is missing or there is no loss history, or ``names``
        does not name each training.
    """
    pairs = (isinstance(model_or_record, Sequence) and len(model_or_record) > 0
             and all(isinstance(p, tuple) and len(p) == 2 for p in model_or_record))
    if pairs:
        runs: list[list[tuple[int, float]]] = []
        for k, v in model_or_record:
            if not runs or int(k) <= runs[-1][-1][0]:
                runs.append([])
            runs[-1].append((int(k), float(v)))
        if names is not None and len(names) != len(runs):
            raise SscrfError(f"names gives {len(names)} name(s) for {len(runs)} training(s)")
        if names is None:
            names = [f"training {i + 1}" for i in range(len(runs))] if len(runs) > 1 else [""]
        stages = list(zip(names, runs))
    else:
        if names is not None:
            raise SscrfError("names goes with (iteration, loss) pairs of several trainings; a "
                             "model's or record's stages are named by the record")
        stages = []
        start = 1
        for name, losses in _loss_stages(model_or_record):
            stages.append((name, list(zip(range(start, start + len(losses)), losses))))
            start += len(losses)
    if not any(points for _, points in stages):
        raise SscrfError("no losses to plot: training ran no iteration")
    figure = _new_figure()
    axes = figure.add_subplot()
    for name, points in stages:
        axes.plot([k for k, _ in points], [v for _, v in points],
                  marker="o" if len(points) <= 50 else None, markersize=3, label=name or None)
    if len(stages) > 1:
        axes.legend()
    if log:
        axes.set_yscale("log")
    axes.set_xlabel("iteration")
    axes.set_ylabel("loss")
    axes.grid(True, alpha=0.3)
    axes.set_title(title or "training loss")
    return _finish(figure, path)


def read_training_log(lines: Iterable[str]) -> list[tuple[int, float]]:
    """The (iteration, loss) reports of ``sscrf train``'s progress output.

    Parameters
    ----------
    lines : iterable of str
        The lines ``sscrf train`` wrote on stderr (an open file will do):
        ``iter  10  loss 252.119  evals 12  0.0s`` lines are read, every
        other line is skipped.

    Returns
    -------
    list of (int, float)
        In the order read; the iterations of a second training stage number
        on from the first (a ``stage 2/2`` line), and a training that follows
        another (the settings of a search on ``--dev``) starts from 1 again.

    Raises
    ------
    SscrfError
        If no line reports a loss.
    """
    found: list[tuple[int, float]] = []
    offset = 0  # the iterations of the stages before, in a training of several
    last = 0  # the last iteration as reported
    next_stage = False  # a "stage 2/2" line came since the last report
    for line in lines:
        for report in line.split("\r"):  # a terminal's reports redraw one line
            stage = _STAGE_LINE.match(report)
            if stage:
                next_stage = int(stage.group(1)) > 1 and bool(found)
                offset = found[-1][0] if next_stage else 0
                continue
            match = _LOG_LINE.match(report)
            if match:
                iteration = int(match.group(1))
                if iteration <= last and not next_stage:  # another training begins
                    offset = 0
                last, next_stage = iteration, False
                loss = float(match.group(2))
                if math.isfinite(loss):
                    found.append((offset + iteration, loss))
    if not found:
        raise SscrfError("no 'iter K loss F' line found: is this the progress output of "
                         "'sscrf train' (written on stderr unless --quiet)?")
    return found
