"""Reading the shared corpora and scoring chunkers.

sscrf and numpy are imported by the functions that need them, so that a
parent process that only launches measured children can import this module
and stay small (its peak memory is a floor of every child's, see
:mod:`bench.lib.timing`).
"""

import os
import time

from bench.lib import features_conll2000
from bench.lib.host import DATA_ROOT

__all__ = ["CONLL2000", "read_conll2000", "chunk_f1", "load_conll2000"]

#: CoNLL-2000 chunking (train.txt, test.txt).
CONLL2000 = os.path.join(DATA_ROOT, "conll2000")


def read_conll2000(data_dir):
    """(train, test, seconds spent reading) of the CoNLL-2000 folder ``data_dir``."""
    from sscrf.io import read_conll

    t0 = time.perf_counter()
    train = read_conll(os.path.join(data_dir, "train.txt"))
    test = read_conll(os.path.join(data_dir, "test.txt"))
    return train, test, time.perf_counter() - t0


def chunk_f1(y_true, y_pred):
    """Chunk F1, precision and recall in percent (conlleval), and the counts."""
    from sscrf.metrics import chunk_scores

    s = chunk_scores(y_true, y_pred)
    return {"f1": 100.0 * s["f1"], "precision": 100.0 * s["precision"],
            "recall": 100.0 * s["recall"], "n_true": s["n_true"], "n_pred": s["n_pred"],
            "n_correct": s["n_correct"]}


def load_conll2000(data_dir, with_attributes=False):
    """(features, gold label ids per token, number of labels) of CoNLL-2000 train,
    with the CRFsuite tutorial attributes; then the attribute strings by id
    where ``with_attributes``."""
    import numpy as np
    from sscrf.features import FeatureExtractor
    from sscrf.io import read_conll

    train = read_conll(os.path.join(data_dir, "train.txt"))
    extractor = FeatureExtractor(None)
    (features,) = extractor.fit_transform(
        [features_conll2000.sscrf_tokens(s) for s in train.tokens])
    labels = sorted({l for s in train.labels for l in s})
    index = {l: i for i, l in enumerate(labels)}
    y = np.array([index[l] for s in train.labels for l in s], dtype=np.int32)
    if with_attributes:
        return features, y, len(labels), extractor.attributes_
    return features, y, len(labels)
