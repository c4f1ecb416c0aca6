"""sscrf.distributed.fit on a real LocalCluster: the one-machine model, whatever the placement.

References: ``CRF.fit`` in one process on the same sentences (vocabulary,
labels and layout equal; weights norm-wise to 1e-8 after 20 iterations), and
the same distributed fit on one worker (the same bits: the shards' sums
follow a fixed tree over shard indices, not the workers).
"""

import os
import signal

import numpy as np
import pytest

import distributed

from sscrf import CRF, SscrfError, SscrfTypeError
from sscrf.demo import generate_hmm_corpus
from sscrf.distributed import ShardedCorpus, fit
from sscrf.distributed.shards import add_results, tree_sum
from sscrf.io import write_conll


@pytest.fixture(scope="module")
def cluster():
    # Processes, as on a real cluster: shards, extractor and weights are pickled. The
    # HTTP server on a free port, not 8787: two test runs on one machine would collide
    # (a UserWarning, an error under this suite's filterwarnings).
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=":0") as c:
        yield c


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def data():
    X, y = generate_hmm_corpus(90, seed=5, max_length=12)
    X_u, _ = generate_hmm_corpus(60, seed=6, max_length=12)
    return X, y, X_u


def relative_gap(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), np.max(np.abs(b))))


@pytest.mark.parametrize("settings", [
    {"feature_set": "observed"}, {"feature_set": "dense", "min_freq": 2},
])
def test_vocabulary_labels_and_layout_are_the_one_machine_fits(client, data, settings):
    X, y, _ = data
    one = CRF(max_iterations=1, templates="default", **settings).fit(X, y)
    many = fit(client, CRF(max_iterations=1, templates="default", **settings),
               ShardedCorpus.from_sentences(client, X, y, n_shards=3))
    assert many.attributes_ == one.attributes_
    assert many.classes_ == one.classes_
    np.testing.assert_array_equal(many.row_ptr_, one.row_ptr_)
    np.testing.assert_array_equal(many.label_ids_, one.label_ids_)


def test_likelihood_fit_equals_one_machine(client, data):
    X, y, _ = data
    one = CRF(max_iterations=20, templates="default").fit(X, y)
    many = fit(client, CRF(max_iterations=20, templates="default"),
               ShardedCorpus.from_sentences(client, X, y, n_shards=3))
    assert many.training_["iterations"] == one.training_["iterations"]
    assert relative_gap(many.coef_, one.coef_) <= 1e-8
    assert many.predict(X[:10]) == one.predict(X[:10])


def test_entropy_fit_with_its_warm_start_equals_one_machine(client, data):
    X, y, X_u = data
    params = dict(max_iterations=20, templates="default", entropy_weight=0.05)
    one = CRF(**params).fit(X[:30], y[:30], X_unlabeled=X_u)
    many = fit(client, CRF(**params), ShardedCorpus.from_sentences(client, X[:30], y[:30]),
               X_unlabeled=ShardedCorpus.from_sentences(client, X_u, n_shards=3))
    assert many.attributes_ == one.attributes_ and many.feature_set_ == "dense"
    assert many.training_["stages"]["supervised"]["iterations"] == \
        one.training_["stages"]["supervised"]["iterations"]
    assert relative_gap(many.coef_, one.coef_) <= 1e-8


def test_partial_labels_equal_one_machine(client, data):
    X, y, _ = data
    partial = [list(seq) for seq in y[:40]]
    for seq in partial[::3]:  # every third sentence: one token unknown, one either-or
        seq[0] = None
        seq[-1] = frozenset({seq[-1], "O"})
    one = CRF(max_iterations=20, templates="default").fit(X[:40], partial)
    many = fit(client, CRF(max_iterations=20, templates="default"),
               ShardedCorpus.from_sentences(client, X[:40], partial, n_shards=2))
    assert relative_gap(many.coef_, one.coef_) <= 1e-8


def test_same_bits_on_one_worker_and_from_files(client, data, tmp_path):
    X, y, _ = data
    parts = [(X[:45], y[:45]), (X[45:], y[45:])]
    for k, (Xk, yk) in enumerate(parts):
        write_conll(tmp_path / f"train-{k}.conll", Xk, yk)
    many = fit(client, CRF(max_iterations=10, templates="default"),
               ShardedCorpus.from_conll(client, str(tmp_path / "train-*.conll")))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as one_worker, \
            distributed.Client(one_worker) as alone:
        single = fit(alone, CRF(max_iterations=10, templates="default"),
                     ShardedCorpus.from_sentences(alone, X, y, n_shards=2))
    np.testing.assert_array_equal(many.coef_, single.coef_)


def test_a_worker_killed_mid_fit_gives_the_same_model(client, data):
    X, y, _ = data
    reference = fit(client, CRF(max_iterations=12, templates="default"),
                    ShardedCorpus.from_sentences(client, X, y, n_shards=4))
    killed = []

    def kill_one_worker(iteration, loss, theta):
        if iteration == 4 and not killed:
            victim = sorted(client.scheduler_info()["workers"])[0]
            # its nanny kills it (SIGKILL: no goodbye to the scheduler) and starts a new one
            client.run(lambda dask_worker: os.kill(dask_worker.process.process.pid,
                                                   signal.SIGKILL), workers=[victim], nanny=True)
            killed.append(victim)
        return False

    survived = fit(client, CRF(max_iterations=12, templates="default"),
                   ShardedCorpus.from_sentences(client, X, y, n_shards=4),
                   callback=kill_one_worker)
    assert killed
    np.testing.assert_array_equal(survived.coef_, reference.coef_)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it, for the next tests


def test_tree_sum_has_a_fixed_shape():
    pieces = [(float(k), np.full(3, 0.1 * k)) for k in range(7)]
    total = tree_sum(pieces, add_results)
    want = ((pieces[0][1] + pieces[1][1]) + (pieces[2][1] + pieces[3][1])) + (
        (pieces[4][1] + pieces[5][1]) + pieces[6][1])
    np.testing.assert_array_equal(total[1], want)
    assert total[0] == 21.0
    with pytest.raises(SscrfError, match="no shard"):
        tree_sum([], add_results)


def test_what_the_distributed_fit_refuses(client, data):
    X, y, X_u = data
    labeled = ShardedCorpus.from_sentences(client, X[:10], y[:10])
    with pytest.raises(SscrfTypeError, match="labeled ShardedCorpus"):
        fit(client, CRF(), X[:10])
    with pytest.raises(SscrfError, match="GE constraints"):
        fit(client, CRF(), labeled, constraints={"w:the": {"O": 1.0}})
    with pytest.raises(SscrfError, match="hash_features"):
        fit(client, CRF(hash_features=2 ** 10), labeled)
    with pytest.raises(SscrfError, match="needs unlabeled data"):
        fit(client, CRF(entropy_weight=0.1), labeled)
    with pytest.raises(SscrfTypeError, match="unlabeled ShardedCorpus"):
        fit(client, CRF(entropy_weight=0.1), labeled, X_unlabeled=labeled)
    with pytest.raises(SscrfError, match="no file matches"):
        ShardedCorpus.from_conll(client, "/nonexistent/part-*.conll")
    with pytest.raises(SscrfError, match="sentences"):
        ShardedCorpus.from_sentences(client, X[:3], y[:2])
