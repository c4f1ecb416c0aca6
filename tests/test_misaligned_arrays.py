"""Arrays that start off their element size, as numpy arrays unpickled from a buffer do
(Dask's workers receive them so): the core reads a copy of an input, refuses an output
it would write in place, and gives the results of aligned arrays."""

import numpy as np
import pytest

from sscrf import SscrfError, _core
from sscrf.corpus import compile_corpus
from sscrf.demo import generate_hmm_corpus
from sscrf.features import FeatureExtractor, default_templates
from sscrf.layout import ParameterLayout


def misaligned(a):
    """A copy of ``a`` whose data start one byte past an aligned address."""
    a = np.ascontiguousarray(a)
    raw = np.zeros(a.nbytes + 1, dtype=np.uint8)
    out = raw[1:].view(a.dtype).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned
    return out


@pytest.fixture(scope="module")
def problem():
    X, y = generate_hmm_corpus(20, seed=2)
    extractor = FeatureExtractor(default_templates(2))
    features = extractor.fit_transform(X)[0]
    classes = sorted({label for seq in y for label in seq})
    labels = np.array([classes.index(label) for seq in y for label in seq], dtype=np.int32)
    layout = ParameterLayout.every_pair(features.n_attributes, len(classes))
    theta = np.random.default_rng(0).normal(size=layout.size) * 0.1
    return features, labels, layout, theta


def test_misaligned_inputs_give_the_aligned_results(problem):
    features, labels, layout, theta = problem
    corpus = compile_corpus(features, labels=labels, n_labels=layout.n_labels)
    want = _core.likelihood(corpus, layout.core, theta, 1)
    odd_layout = _core.Layout(misaligned(layout.row_ptr), misaligned(layout.label_ids),
                              layout.n_labels)
    odd_corpus = _core.Corpus(misaligned(features.indptr), misaligned(features.indices),
                              misaligned(features.values), misaligned(features.offsets),
                              features.n_attributes, misaligned(labels))
    got = _core.likelihood(odd_corpus, odd_layout, misaligned(theta), 1)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def test_a_misaligned_output_is_refused_not_written_elsewhere(problem):
    features, labels, layout, theta = problem
    corpus = compile_corpus(features, labels=labels, n_labels=layout.n_labels)
    with pytest.raises(SscrfError, match="aligned"):
        _core.likelihood(corpus, layout.core, theta, 1, out=misaligned(np.zeros(layout.size)))
