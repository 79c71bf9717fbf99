"""Local metrics fitted by a pool of ``n_threads`` threads, the one thread knob of L-GMML:
same random stream, same model for every thread count."""

import os
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from ltr_bench.ranker import apply_run_settings
from ltr_bench_lgmml import LGMMLRanker
from ltr_bench_lgmml.local_metrics import (
    QuerySets,
    draw_metric_samples,
    fit_local_metrics,
    resolve_n_threads,
)


def _data(seed=0, n_queries=14, n_docs=20, d=6):
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 3, size=(n_queries, n_docs))
    X = rng.normal(size=(n_queries * n_docs, d))
    X[:, 0] += 1.5 * lab.ravel()  # one informative feature
    return X, lab.ravel(), np.repeat(np.arange(n_queries), n_docs)


def _fit_metrics(n_threads, *, query_dependent=False, progress=None, seed=5):
    X, y, qid = _data()
    bounds = np.r_[0, np.flatnonzero(np.diff(qid)) + 1, qid.size]
    sets = QuerySets(y, bounds, "upper_half", "zero")
    qp = (lambda qi: X[bounds[qi]] * 0.5) if query_dependent else None
    return fit_local_metrics(
        rng=np.random.default_rng(seed),
        y=y,
        sets=sets,
        rows=lambda idx: X[idx],
        query_points=qp,
        n_metrics=25,
        queries_per_metric=2,
        max_positives=4,
        max_negatives=3,
        reg_lambda=0.1,
        t=0.5,
        distance="paper",
        anchor_k=10,
        reg_scale="relative",
        progress=progress,
        n_threads=n_threads,
    )


@pytest.mark.parametrize("query_dependent", [False, True])
def test_local_metrics_anchors_and_ndcgs_are_bit_identical_for_one_and_two_threads(query_dependent):
    m1, a1, n1 = _fit_metrics(1, query_dependent=query_dependent)
    m2, a2, n2 = _fit_metrics(2, query_dependent=query_dependent)
    assert len(m1) == len(m2) == 25
    for p, q in zip(m1, m2):
        assert p.alpha == q.alpha and p.reg_lambda == q.reg_lambda
        assert np.array_equal(p.V, q.V) and np.array_equal(p.g, q.g)
    assert (a1 is None) == query_dependent == (a2 is None)
    if not query_dependent:
        assert np.array_equal(a1, a2)
    assert np.array_equal(n1, n2, equal_nan=True)


@pytest.mark.parametrize(
    "kw", [{}, {"weight_strategy": "mean", "score_form": "rising"}, {"weight_method": "listnet"}]
)
def test_fitted_ranker_and_predictions_are_bit_identical_for_one_and_two_threads(kw):
    X, y, qid = _data(1)
    fits = [
        LGMMLRanker(n_metrics=20, n_iter=300, random_state=2, n_threads=j, **kw).fit(X, y, qid=qid)
        for j in (1, 2)
    ]
    a, b = (f.metric_bank_ for f in fits)
    for name in ("alpha", "V", "g", "seg", "anchors", "dist_scale"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(fits[0].weights_, fits[1].weights_)
    assert np.array_equal(fits[0].anchor_ndcg_, fits[1].anchor_ndcg_)
    assert np.array_equal(fits[0].predict(X), fits[1].predict(X))


def _sequential_reference_draws(rng, sets, n_metrics, qpm, max_pos, max_neg):
    """The rng calls of the loop before parallel fits (choice of queries, then per sorted
    query a positive and a negative subsample), written out independently."""
    out = []
    for _ in range(n_metrics):
        picked = rng.choice(sets.eligible, size=min(qpm, sets.eligible.size), replace=False)
        per_query = []
        for qi in np.sort(picked):
            sampled = []
            for idx, cap in ((sets.pos[qi], max_pos), (sets.neg[qi], max_neg)):
                if idx.size > cap:
                    idx = np.sort(rng.choice(idx, size=cap, replace=False))
                sampled.append(idx)
            per_query.append((qi, *sampled))
        out.append(per_query)
    return out


def test_draws_consume_the_random_stream_exactly_as_the_sequential_loop_did():
    X, y, qid = _data()
    bounds = np.r_[0, np.flatnonzero(np.diff(qid)) + 1, qid.size]
    sets = QuerySets(y, bounds, "upper_half", "zero")
    rng_a, rng_b = np.random.default_rng(9), np.random.default_rng(9)
    draws = draw_metric_samples(
        rng_a, sets, n_metrics=30, queries_per_metric=3, max_positives=3, max_negatives=4
    )
    ref = _sequential_reference_draws(rng_b, sets, 30, 3, 3, 4)
    for draw, per_query in zip(draws, ref):
        assert draw.queries.tolist() == [qi for qi, _, _ in per_query]
        for p, n, (_, rp, rn) in zip(draw.pos, draw.neg, per_query):
            assert np.array_equal(p, rp) and np.array_equal(n, rn)
    # later stages (the "rising" sample, WARP) continue from the same state
    assert rng_a.bit_generator.state == rng_b.bit_generator.state


def test_progress_is_reported_in_metric_order_from_the_calling_thread():
    calls = []
    _fit_metrics(2, progress=lambda d, tot: calls.append((d, tot, threading.get_ident())))
    assert [(d, t) for d, t, _ in calls] == [(i, 25) for i in range(1, 26)]
    assert {ident for _, _, ident in calls} == {threading.get_ident()}


def test_blas_thread_limits_are_restored_after_a_parallel_fit():
    # threadpoolctl limits are process-wide; per-worker limits would leave them changed
    before = [(i["internal_api"], i["num_threads"]) for i in threadpool_info()]
    _fit_metrics(2)
    assert [(i["internal_api"], i["num_threads"]) for i in threadpool_info()] == before


def test_an_error_in_a_worker_reaches_the_caller():
    X, y, qid = _data()
    bounds = np.r_[0, np.flatnonzero(np.diff(qid)) + 1, qid.size]
    sets = QuerySets(y, bounds, "upper_half", "zero")

    def rows(idx):
        raise RuntimeError("bad rows")

    with pytest.raises(RuntimeError, match="bad rows"):
        fit_local_metrics(
            rng=np.random.default_rng(0),
            y=y,
            sets=sets,
            rows=rows,
            query_points=None,
            n_metrics=6,
            queries_per_metric=1,
            max_positives=3,
            max_negatives=3,
            reg_lambda=0.1,
            t=0.5,
            distance="paper",
            anchor_k=10,
            n_threads=2,
        )


@pytest.mark.parametrize("bad", [0, -1, "x", 1.5, True])
def test_bad_n_threads_raises_a_value_error_naming_n_threads(bad):
    X, y, qid = _data(n_queries=3)
    with pytest.raises(ValueError, match="n_threads must be an integer >= 1 or None"):
        LGMMLRanker(n_threads=bad).validate_params()
    with pytest.raises(ValueError, match="n_threads"):
        LGMMLRanker(n_metrics=3, n_threads=bad).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="n_threads must be an integer >= 1 or None"):
        resolve_n_threads(bad)


def test_n_threads_none_means_a_pool_of_every_cpu_of_the_affinity_mask():
    cpus = len(os.sched_getaffinity(0))
    assert resolve_n_threads(None) == cpus
    assert resolve_n_threads(3) == 3
    X, y, qid = _data(n_queries=4)
    LGMMLRanker(n_metrics=3, n_iter=20, n_threads=None, random_state=0).fit(X, y, qid=qid)


def test_n_threads_is_the_one_thread_parameter_and_the_harness_sets_it_from_threads():
    r = LGMMLRanker()
    assert "n_jobs" not in r.get_params()
    assert r.ranker_tags().thread_param == "n_threads"
    assert apply_run_settings(r, seed=None, threads=2, query_dim=None) == {"n_threads": 2}
    assert r.n_threads == 2


def test_the_thread_count_is_not_part_of_an_lgmml_configuration_key():
    from ltr_bench.run.cells import expand_plan
    from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice

    def cells(threads):
        plan = Plan(
            rankers=[RankerChoice("lgmml", {"n_metrics": 4})],
            datasets=[DatasetChoice("synthetic", {})],
            folds=[1],
            seed=0,
            threads=threads,
        )
        return expand_plan(plan, score_repeats=1).cells

    one, two = cells(1), cells(2)
    assert [c.params["n_threads"] for c in one + two] == [1, 2]
    assert one[0].config_key == two[0].config_key


def test_two_threads_fit_the_metrics_on_worker_threads_and_one_on_the_caller():
    X, y, qid = _data()
    bounds = np.r_[0, np.flatnonzero(np.diff(qid)) + 1, qid.size]
    sets = QuerySets(y, bounds, "upper_half", "zero")
    for n_threads in (1, 2):
        names = set()

        def rows(idx):
            names.add(threading.current_thread().name)
            return X[idx]

        fit_local_metrics(
            rng=np.random.default_rng(0),
            y=y,
            sets=sets,
            rows=rows,
            query_points=None,
            n_metrics=8,
            queries_per_metric=1,
            max_positives=3,
            max_negatives=3,
            reg_lambda=0.1,
            t=0.5,
            distance="paper",
            anchor_k=10,
            n_threads=n_threads,
        )
        if n_threads == 1:
            assert names == {threading.current_thread().name}
        else:
            assert names and all(n.startswith("lgmml-metric") for n in names)


def test_listnet_weights_are_bit_identical_for_one_and_two_threads_at_blas_threading_size():
    # 24k rows: large enough that OpenBLAS splits ListNet's row sums (target @ logsoft,
    # H.T @ r) between threads, which changed Phi in the last bits before ListNet was held
    # at one BLAS thread (this test failed then on a 2-core machine)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=600 * 40)
    X = rng.normal(size=(y.size, 10))
    X[:, 0] += 0.5 * y
    qid = np.repeat(np.arange(600), 40)
    fits = [
        LGMMLRanker(n_metrics=30, weight_method="listnet", random_state=0, n_threads=t).fit(
            X, y, qid=qid
        )
        for t in (1, 2)
    ]
    assert np.array_equal(fits[0].weights_, fits[1].weights_)
    assert np.array_equal(fits[0].predict(X[:2000]), fits[1].predict(X[:2000]))


def test_scores_and_features_are_bit_identical_for_one_two_and_three_threads_over_many_chunks():
    # 3 x SCORE_CHUNK_ROWS + 17 rows: several fixed chunks shared between the threads, and a
    # short last one; float32 distance terms too (another BLAS kernel)
    from ltr_bench_lgmml.scoring import SCORE_CHUNK_ROWS

    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, size=200 * 30)
    X = rng.normal(size=(y.size, 12))
    X[:, 0] += 0.5 * y
    qid = np.repeat(np.arange(200), 30)
    Xs = rng.normal(size=(3 * SCORE_CHUNK_ROWS + 17, 12))
    for dtype in ("float64", "float32"):
        model = LGMMLRanker(n_metrics=20, random_state=0, dtype=dtype, n_threads=1).fit(
            X, y, qid=qid
        )
        ref_scores, ref_h = model.predict(Xs), model.decision_features(Xs)
        for t in (2, 3):
            model.set_params(n_threads=t)
            assert np.array_equal(model.predict(Xs), ref_scores), (dtype, t)
            assert np.array_equal(model.decision_features(Xs), ref_h), (dtype, t)
        w = model.metric_bank_.sign * model.weights_
        assert np.allclose(ref_h @ w, ref_scores, rtol=1e-12, atol=1e-12)


def test_scoring_chunks_run_on_n_threads_workers_with_one_blas_thread():
    import threading

    from threadpoolctl import threadpool_info

    from ltr_bench_lgmml.scoring import map_row_chunks

    seen = []

    def chunk(rows):
        blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        seen.append((rows.start, threading.current_thread().name, blas))

    map_row_chunks(10, 3, chunk, 2)
    assert sorted(s[0] for s in seen) == [0, 3, 6, 9]
    assert all(name.startswith("lgmml-score") for _, name, _ in seen)
    assert all(nums and all(n == 1 for n in nums) for _, _, nums in seen)
