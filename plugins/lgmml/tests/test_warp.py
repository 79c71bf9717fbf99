"""WARP learning of Phi (Eq. 14-21)."""

import numpy as np
import pytest

from ltr_bench_lgmml.local_metrics import QuerySets
from ltr_bench_lgmml.warp import rank_weight, rank_weight_table, train_warp, warp_loss


def test_rank_weight_is_eq16():
    assert rank_weight(0) == 0.0
    assert rank_weight(1) == pytest.approx(1.0)
    assert rank_weight(3) == pytest.approx(1 + 1 / np.log2(3) + 1 / np.log2(4))
    assert np.allclose(rank_weight_table(5), [rank_weight(k) for k in range(6)])


def _problem(seed=0, n_queries=12, m=6):
    # Features h in [0, 1/e]; metrics 0 and 1 separate positives (small h) from negatives
    # (large h), the others are noise. With sign -1 a large Phi on 0-1 ranks positives first.
    rng = np.random.default_rng(seed)
    y, qid, H = [], [], []
    for q in range(n_queries):
        lab = np.r_[np.full(4, 2), np.full(16, 0)]
        h = rng.uniform(0, 0.36, size=(20, m))
        h[lab == 2, :2] *= 0.3
        y.append(lab), qid.append(np.full(20, q)), H.append(h)
    y, qid, H = np.concatenate(y), np.concatenate(qid), np.vstack(H)
    bounds = np.r_[np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]]), qid.size]
    return y, bounds, H


def _split(H, sets):
    return ([H[p] for p in sets.pos], [H[n] for n in sets.neg])


@pytest.mark.parametrize("mode", ["global", "per_query"])
def test_warp_lowers_its_training_loss_and_keeps_phi_nonnegative(mode):
    y, bounds, H = _problem()
    sets = QuerySets(y, bounds, "upper_half", "zero")
    kw = dict(
        sets=sets,
        features=lambda rows: H[rows],
        n_metrics=6,
        mode=mode,
        initial_weight=1.0,
        step_size=0.1,
        margin=0.01,
        sign=-1.0,
        cache_bytes=1 << 20,
    )
    phi0 = train_warp(rng=np.random.default_rng(0), n_iter=0, **kw)
    phi = train_warp(rng=np.random.default_rng(3), n_iter=3000, **kw)
    Hp, Hn = _split(H, sets)
    before = warp_loss(Hp, Hn, phi0, -1.0, 0.01)
    after = warp_loss(Hp, Hn, phi, -1.0, 0.01)
    assert after < 0.75 * before
    assert phi.min() >= 0.0


def test_chunked_global_warp_still_lowers_the_loss_when_features_do_not_fit():
    y, bounds, H = _problem(seed=3)
    sets = QuerySets(y, bounds, "upper_half", "zero")
    calls = []

    def features(rows):
        calls.append(rows.size)
        return H[rows]

    kw = dict(
        sets=sets,
        features=features,
        n_metrics=6,
        mode="global",
        initial_weight=1.0,
        step_size=0.1,
        margin=0.01,
        sign=-1.0,
        cache_bytes=3 * 20 * 6 * 8,
    )
    phi = train_warp(rng=np.random.default_rng(3), n_iter=3000, **kw)
    assert max(calls) <= 3 * 20  # never more than the budget's rows at once
    Hp, Hn = _split(H, sets)
    assert warp_loss(Hp, Hn, phi, -1.0, 0.01) < 0.75 * warp_loss(Hp, Hn, np.ones(6), -1.0, 0.01)


def test_per_query_updates_only_touch_the_sampled_query_and_skip_ineligible_ones():
    y, bounds, H = _problem(n_queries=3)
    y[bounds[2] :] = 1  # third query: no label-0 document -> no WARP update, no crash
    sets = QuerySets(y, bounds, "upper_half", "zero")
    phi = train_warp(
        rng=np.random.default_rng(0),
        sets=sets,
        features=lambda r: H[r],
        n_metrics=6,
        n_iter=200,
        mode="per_query",
        initial_weight=1.0,
        step_size=0.5,
        margin=0.01,
        sign=-1.0,
        cache_bytes=1 << 20,
    )
    assert phi.shape == (3, 6)
    assert np.array_equal(phi[2], np.ones(6))
    assert not np.array_equal(phi[0], np.ones(6))


def test_authors_step_size_schedule_is_accepted():
    y, bounds, H = _problem()
    sets = QuerySets(y, bounds, "upper_half", "zero")
    phi = train_warp(
        rng=np.random.default_rng(0),
        sets=sets,
        features=lambda r: H[r],
        n_metrics=6,
        n_iter=100,
        mode="global",
        initial_weight=1.0,
        step_size="authors",
        margin=0.01,
        sign=-1.0,
        cache_bytes=1 << 20,
    )
    assert np.all(np.isfinite(phi)) and phi.min() >= 0
