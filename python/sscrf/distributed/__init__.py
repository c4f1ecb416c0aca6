"""sscrf on a Dask cluster (``pip install "sscrf[dask]"``): tagging and pool scoring."""

from .tagging import broadcast_model, conll_bag, predict, predict_marginals, score_pool

__all__ = ["broadcast_model", "conll_bag", "predict", "predict_marginals", "score_pool"]
