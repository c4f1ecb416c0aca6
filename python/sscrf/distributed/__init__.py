"""sscrf on a Dask cluster (``pip install "sscrf[dask]"``): training, tagging, pool scoring.

:class:`ShardedCorpus` and :func:`fit` train on sentences held on the
workers (:mod:`sscrf.distributed.fitting`), :class:`ClusterObjective` is
the objective they minimise; :func:`predict`,
:func:`predict_marginals` and :func:`score_pool` tag and rank bags of
sentences (:mod:`sscrf.distributed.tagging`). What runs on one shard is in
:mod:`sscrf.distributed.shards`, free of any engine.
"""

try:
    import dask.bag  # noqa: F401
    import distributed  # noqa: F401
except ImportError as missing:  # the optional extra
    raise ImportError('sscrf.distributed needs Dask: pip install "sscrf[dask]" (dask[bag] and '
                      "distributed)") from missing

from .fitting import ClusterObjective, ShardedCorpus, fit
from .tagging import broadcast_model, conll_bag, predict, predict_marginals, score_pool

__all__ = ["ClusterObjective", "ShardedCorpus", "broadcast_model", "conll_bag", "fit", "predict",
           "predict_marginals", "score_pool"]
