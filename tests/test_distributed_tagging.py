"""sscrf.distributed.tagging on a real LocalCluster: equal to one process.

The reference is the same model's one-process ``predict``, ``predict_marginals``
and :func:`sscrf.active.select` on the pool collected in a list (those are
checked against brute force in their own tests); the cluster must give the same
labels, the same marginals bit for bit, and choose the same sentences.
"""

import numpy as np
import pytest

import dask.bag as db
import distributed

from sscrf import CRF, SscrfError, SscrfTypeError
from sscrf.active import select
from sscrf.demo import generate_hmm_corpus
from sscrf.distributed import (ShardedCorpus, broadcast_model, conll_bag, predict,
                               predict_marginals, score_pool)
from sscrf.io import write_conll


@pytest.fixture(scope="module")
def client():
    # Processes, as on a real cluster: the model and the sentences are pickled. The
    # HTTP server on a free port, not 8787: two test runs on one machine would collide
    # (a UserWarning, an error under this suite's filterwarnings).
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=":0")
    with cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def data():
    X, y = generate_hmm_corpus(120, seed=3)
    pool, _ = generate_hmm_corpus(60, seed=4)
    crf = CRF(max_iterations=30).fit(X, y)
    return crf, pool


def test_predict_equals_one_process(client, data):
    crf, pool = data
    for npartitions in (1, 4, 7):
        bag = db.from_sequence(pool, npartitions=npartitions)
        assert predict(client, crf, bag).compute() == crf.predict(pool)


def test_predict_with_a_broadcast_model_and_empty_sentences(client, data):
    crf, pool = data
    sentences = [pool[0], [], pool[1], []]
    model = broadcast_model(client, crf)
    bag = db.from_sequence(sentences, npartitions=3)
    assert predict(client, model, bag).compute() == crf.predict(sentences)
    assert predict(client, model, bag).compute()[1] == []


def test_marginals_equal_one_process_bit_for_bit(client, data):
    crf, pool = data
    got = predict_marginals(client, crf, db.from_sequence(pool, npartitions=5)).compute()
    assert got == crf.predict_marginals(pool)  # dict equality of floats: exact


@pytest.mark.parametrize("strategy, options", [
    ("least_confidence", {}), ("sequence_entropy", {"normalize": True}),
    ("token_entropy", {"aggregate": "mean"}), ("most_uncertain_span", {"width": 2}),
])
def test_score_pool_chooses_what_select_chooses(client, data, strategy, options):
    crf, pool = data
    want_i, want_s = select(crf, pool, strategy, 9, **options)
    got_i, got_s = score_pool(client, crf, db.from_sequence(pool, npartitions=4), strategy, 9,
                              **options)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(got_s, want_s)


def test_score_pool_ties_go_to_the_lower_index_across_partitions(client, data):
    crf, pool = data
    tied = [pool[5]] * 6  # equal scores in every partition
    got, _ = score_pool(client, crf, db.from_sequence(tied, npartitions=3), "sequence_entropy", 4)
    want, _ = select(crf, tied, "sequence_entropy", 4)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [0, 1, 2, 3])


def test_score_pool_without_a_model(client, data):
    _, pool = data
    bag = db.from_sequence(pool, npartitions=3)
    got = score_pool(client, None, bag, "random", 5, random_state=7)
    want = select(None, pool, "random", 5, random_state=7)
    np.testing.assert_array_equal(got[0], want[0])
    log_q = np.linspace(0, -3, len(pool))
    got = score_pool(client, None, bag, "quota_sampling", 4, log_q=log_q, random_state=1)
    want = select(None, pool, "quota_sampling", 4, log_q=log_q, random_state=1)
    np.testing.assert_array_equal(got[0], want[0])


def test_conll_bag_one_partition_per_file(client, data, tmp_path):
    crf, pool = data
    halves = (pool[:25], pool[25:])
    for k, half in enumerate(halves):
        write_conll(tmp_path / f"part-{k}.conll", half)
    bag = conll_bag(str(tmp_path / "part-*.conll"))
    assert bag.npartitions == 2
    assert predict(client, crf, bag).compute() == crf.predict(pool)


def test_bad_input_is_refused_with_its_name(client, data, tmp_path):
    crf, pool = data
    bag = db.from_sequence(pool, npartitions=2)
    with pytest.raises(SscrfTypeError, match="dask.bag.Bag"):
        predict(client, crf, pool)
    with pytest.raises(SscrfTypeError, match="distributed.Client"):
        predict("tcp://127.0.0.1:8786", crf, bag)
    with pytest.raises(SscrfError, match="not fitted"):
        predict(client, CRF(), bag)
    with pytest.raises(SscrfError, match="unknown strategy"):
        score_pool(client, crf, bag, "most_confused", 3)
    with pytest.raises(SscrfError, match="exclude"):
        score_pool(client, crf, bag, "most_uncertain_span", 3, exclude=[None] * len(pool))
    with pytest.raises(SscrfError, match="log_q"):
        score_pool(client, crf, bag, "least_confidence", 3, log_q=[0.0])
    with pytest.raises(SscrfError, match="no file matches"):
        conll_bag(str(tmp_path / "nothing-*.conll"))
    with pytest.raises(FileNotFoundError, match="missing.conll"):  # as read_conll in one process
        predict(client, crf, conll_bag(str(tmp_path / "missing.conll"))).compute()


def test_a_sharded_corpus_is_tagged_and_scored_where_its_shards_lie(client, data):
    crf, pool = data
    sharded = ShardedCorpus.from_sentences(client, pool, n_shards=3)
    assert predict(client, crf, sharded).compute() == crf.predict(pool)
    got = predict_marginals(client, crf, sharded).compute()
    assert got == crf.predict_marginals(pool)
    chosen, scores = score_pool(client, crf, sharded, "sequence_entropy", 7)
    want_chosen, want_scores = select(crf, pool, "sequence_entropy", 7)
    np.testing.assert_array_equal(chosen, want_chosen)
    np.testing.assert_array_equal(scores, want_scores)
