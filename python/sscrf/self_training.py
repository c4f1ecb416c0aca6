"""Self-training, the semi-supervised baseline of Jiao et al. (2006) §5.1.

Train on the labeled data, label the unlabeled data with the model's
Viterbi paths, retrain on the union, and repeat until the labels of the
unlabeled data stop changing or a round limit is reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from .errors import SscrfError
from .inputs import check_integer, check_unlabeled
from .progress import Progress


def self_train(model: Any, X: Sequence[Any], y: Sequence[Sequence[str]], X_unlabeled: Sequence[Any],
               max_rounds: int = 5, verbose: Optional[bool] = None) -> Any:
    """Fit ``model`` by self-training and return it.

    Parameters
    ----------
    model : sscrf.CRF
        Unfitted or fitted; its hyperparameters are used every round (its
        ``entropy_weight`` is ignored). Each round warm-starts from the last.
    X, y : labeled sentences and their labels
    X_unlabeled : list of sentences
    max_rounds : int
        Retraining rounds after the first supervised fit.
    verbose : bool or None
        Print one line per round to stderr; None follows ``model.verbose``.

    Returns
    -------
    model
        With ``self_training_`` : list of dicts per round (``round``,
        ``changed`` = number of unlabeled tokens whose label changed).
    """
    X_unlabeled = check_unlabeled(X_unlabeled)
    if not X_unlabeled:
        raise SscrfError("self-training needs unlabeled sentences")
    max_rounds = check_integer(max_rounds, "max_rounds", minimum=0)
    report = Progress(model.verbose if verbose is None else verbose)
    saved = model.entropy_weight
    model.set_params(entropy_weight=0.0)
    try:
        model.fit(X, y)
        guessed = model.predict(X_unlabeled)
        history: list[dict[str, Any]] = [{"round": 0, "changed": None}]
        for k in range(1, max_rounds + 1):
            model.fit(list(X) + list(X_unlabeled), list(y) + guessed, init=model)
            relabeled = model.predict(X_unlabeled)
            changed = sum(a != b for old, new in zip(guessed, relabeled) for a, b in zip(old, new))
            history.append({"round": k, "changed": changed})
            report.note(f"self-training round {k}: {changed} unlabeled tokens changed label")
            guessed = relabeled
            if changed == 0:
                break
    finally:
        model.set_params(entropy_weight=saved)
    model.self_training_ = history
    return model
