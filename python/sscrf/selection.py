"""Choosing hyperparameters on held-out sentences, with warm starts along the c2 path.

:func:`select_hyperparameters` fits an estimator at every setting of a grid
(``c2``, and the weights of the semi-supervised terms: ``entropy_weight``,
``ge_weight``, ``proportion_weight``), scores each on the dev sentences and
returns the best fitted model with a table of every setting's dev score.
Along the regularisation path the fits run from the largest ``c2`` down,
each starting from the previous fit's weights (``fit(..., init=)``), as
glmnet does for the lasso path: a weaker prior moves the optimum little, so
each fit starts near its own.
"""

from __future__ import annotations

import itertools
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from .errors import SscrfError, SscrfTypeError
from .fit_callbacks import check_dev_pair
from .model import CRF
from .progress import Progress
from .training import ZERO_WEIGHT_WARNING, shared_compilation

__all__ = ["SEMI_SUPERVISED_WEIGHTS", "Selection", "select_hyperparameters"]

#: Grid entries that weigh a term on unlabeled data: 0 joins each of them, so
#: that the supervised baseline is one of the settings and can win.
SEMI_SUPERVISED_WEIGHTS = ("entropy_weight", "ge_weight", "proportion_weight")


@dataclass
class Selection:
    """What :func:`select_hyperparameters` returns.

    Attributes
    ----------
    model : CRF
        The fitted model of the best setting.
    best_params : dict
        Its grid values.
    best_score : float
        Its dev score.
    table : list of dict
        One row per setting, in the order they were fitted: the grid's
        hyperparameter names with their values, ``"dev_score"``,
        ``"iterations"`` (L-BFGS iterations, every stage together),
        ``"best_iteration"`` (the iterate kept), ``"seconds"`` and
        ``"warm_start"`` (whether the fit started from the previous
        setting's weights).
    added_zero : list of str
        The semi-supervised weights to whose values 0 was added.
    """

    model: CRF
    best_params: dict[str, Any]
    best_score: float
    table: list[dict[str, Any]] = field(default_factory=list)
    added_zero: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        """The table as text: a row per setting in the order they were fitted,
        the chosen one marked (``sscrf train --dev`` prints it)."""
        names = list(self.best_params)
        widths = [max(len(name), 8) for name in names]
        lines = ["  ".join(f"{name:>{w}}" for name, w in zip(names, widths))
                 + "  dev score  best iteration  iterations  seconds"]
        for row in self.table:
            chosen = all(row[name] == self.best_params[name] for name in names)
            lines.append("  ".join(f"{_cell(row[name]):>{w}}" for name, w in zip(names, widths))
                         + f"  {row['dev_score']:>9.4f}  {row['best_iteration']:>14}"
                         f"  {row['iterations']:>10}  {row['seconds']:>7.1f}"
                         + ("  <- chosen" if chosen else ""))
        if self.added_zero:
            lines.append(f"(0 was added to {', '.join(self.added_zero)}: the model without "
                         "the term is one of the settings)")
        return "\n".join(lines)


def _cell(value: Any) -> str:
    """A grid value as the table shows it."""
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else str(value)


def _check_grid(estimator: Any, grid: Any, add_zero: bool = True
                ) -> tuple[dict[str, list[Any]], list[str]]:
    if not isinstance(estimator, CRF):
        raise SscrfTypeError(f"estimator must be a sscrf.CRF, not {type(estimator).__name__}")
    if not isinstance(add_zero, bool):
        raise SscrfTypeError(f"add_zero must be True or False, not {add_zero!r}")
    if not isinstance(grid, dict) or not grid:
        raise SscrfTypeError("grid must be a non-empty dict {hyperparameter: list of values}, "
                             f"e.g. {{'c2': [1, 0.1, 0.01]}}, not {grid!r}")
    names = set(estimator.get_params())
    out, added = {}, []
    for name, values in grid.items():
        if name not in names:
            raise SscrfError(f"grid: {name!r} is not a hyperparameter of CRF")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise SscrfTypeError(f"grid[{name!r}] must be a list of values, not {values!r}")
        values = list(dict.fromkeys(values))
        if not values:
            raise SscrfError(f"grid[{name!r}] is empty")
        if add_zero and name in SEMI_SUPERVISED_WEIGHTS and 0 not in values:
            values = [0.0] + values
            added.append(name)
        out[name] = values
    return out, added


def _settings(grid: Mapping[str, Sequence[Any]]) -> Iterator[tuple[dict[str, Any], bool]]:
    """The grid's settings, each a dict, ordered for warm starts: the c2 path (largest
    first) innermost, so consecutive settings differ by c2 only."""
    others = [name for name in grid if name != "c2"]
    c2_values = sorted(grid.get("c2", [None]), key=lambda v: -float("inf") if v is None else -v)
    for combo in itertools.product(*(grid[name] for name in others)):
        for k, c2 in enumerate(c2_values):
            setting = dict(zip(others, combo))
            if c2 is not None:
                setting["c2"] = c2
            yield setting, k > 0


def _preference(row: Mapping[str, Any], grid: Mapping[str, Sequence[Any]]) -> tuple[Any, ...]:
    """Sort key of a row: dev score, then the simpler model on ties (zero
    semi-supervised weights, then the larger c2)."""
    zeros = sum(row[name] == 0 for name in grid if name in SEMI_SUPERVISED_WEIGHTS)
    return (row["dev_score"], zeros, row.get("c2", 0.0))


def select_hyperparameters(estimator: CRF, grid: Mapping[str, Sequence[Any]], X: Any, y: Any,
                           X_dev: Any, y_dev: Any, *, add_zero: bool = True,
                           **fit_params: Any) -> Selection:
    """Fit ``estimator`` at every setting of ``grid``; keep the one of the best dev score.

    Parameters
    ----------
    estimator : CRF
        The settings not in ``grid`` (it is not changed; fits run on copies).
    grid : dict
        ``{hyperparameter: list of values}``, e.g. ``{"c2": [3, 1, 0.3, 0.1,
        0.03, 0.01, 0.003], "entropy_weight": [0.01, 0.1]}``; every
        combination is fitted. **0 is added to the values of
        ``entropy_weight``, ``ge_weight`` and ``proportion_weight`` when
        absent**, so that the supervised baseline (``feature_set="auto"``
        resolves to the same ``dense`` features there) is in the grid and
        wins when the unlabeled data do not help.
    X, y : training sentences and labels, as for :meth:`CRF.fit`.
    X_dev, y_dev : held-out sentences and their labels
        (or a :class:`sscrf.CompiledCorpus` compiled with its labels under
        the compiled training corpus's vocabulary, and None). Each fit keeps its iterate of the best dev score
        (:meth:`CRF.fit`'s ``X_dev``; the estimator's ``dev_scoring`` and
        ``dev_period``), and the setting of the best such score wins. Ties
        go to the setting with more zero semi-supervised weights, then to
        the larger ``c2``.
    add_zero : bool, default True
        False: the grid's values as given, 0 added to none. For a search
        that extends an earlier one on the same data whose zero-weight
        settings are already fitted (``entropy_weight`` alone, then with
        ``proportion_weight`` in {0.01, 0.1}): compare the two
        :attr:`Selection.best_score` values rather than fit those settings
        twice.
    **fit_params
        Passed to every fit: ``X_unlabeled``, ``constraints``,
        ``sample_weight``, ...

    Returns
    -------
    Selection
        ``model``, ``best_params``, ``best_score``, ``table`` and
        ``added_zero``.

    Notes
    -----
    The fits of one combination of the other hyperparameters run from the
    largest ``c2`` down, each from the previous one's weights (``init``).
    A warm-started fit with a semi-supervised term starts from that
    previous model rather than from a supervised optimum of its own.
    The iterate of the best dev score that each fit keeps therefore
    depends on the settings before it on the path; with ``dev_period``
    above ``max_iterations`` only the last iterate is scored.
    """
    grid, added = _check_grid(estimator, grid, add_zero)
    if X_dev is None:
        raise SscrfError("select_hyperparameters needs held-out sentences: X_dev and y_dev")
    check_dev_pair(X_dev, y_dev)
    for name in ("X_dev", "y_dev", "init"):
        if name in fit_params:
            raise SscrfError(f"{name} is chosen by select_hyperparameters; do not pass it")
    report = Progress(estimator.verbose)
    base = estimator.get_params()
    table, best, previous = [], None, None
    settings = list(_settings(grid))
    with shared_compilation():  # every setting reads the same sentences
        for i, (setting, warm) in enumerate(settings):
            model = CRF(**dict(base, **setting))
            started = time.perf_counter()
            with warnings.catch_warnings():
                # the baseline setting, whose zero weights the search adds on purpose
                warnings.filterwarnings("ignore", re.escape(ZERO_WEIGHT_WARNING), UserWarning)
                model.fit(X, y, init=previous if warm else None, X_dev=X_dev, y_dev=y_dev,
                          **fit_params)
            record = model.training_
            stages = record.get("stages", {})
            row = dict(setting)
            row.update(dev_score=record["dev"]["best_score"],
                       iterations=record["iterations"] + sum(s["iterations"]
                                                             for s in stages.values()),
                       best_iteration=record["dev"]["best_iteration"],
                       seconds=time.perf_counter() - started, warm_start=bool(warm))
            table.append(row)
            report.note(f"setting {i + 1}/{len(settings)}: "
                        + ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v!r}"
                                    for k, v in setting.items())
                        + f": dev {row['dev_score']:.4f}")
            if best is None or _preference(row, grid) > _preference(best[0], grid):
                best = (row, model)
            previous = model
    assert best is not None  # the grid has at least one setting (_check_grid)
    row, model = best
    return Selection(model=model, best_params={name: row[name] for name in grid},
                     best_score=row["dev_score"], table=table, added_zero=added)
