"""allRank-family losses against brute-force or closed-form values on small lists.

References are written independently of the implementations: explicit Python loops over
documents, pairs and permutations, and ``ltr_bench.evaluation.evaluate`` for exact NDCG.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ltr_bench.evaluation.metrics import evaluate  # noqa: E402
from ltr_bench_neural.losses.approxndcg import approxndcg  # noqa: E402
from ltr_bench_neural.losses.lambdaloss import WEIGHING_SCHEMES, lambdaloss  # noqa: E402
from ltr_bench_neural.losses.listmle import listmle  # noqa: E402
from ltr_bench_neural.losses.neuralndcg import neural_sort, neuralndcg, sinkhorn  # noqa: E402
from ltr_bench_neural.losses.pointwise_allrank import bce, ordinal, rmse  # noqa: E402

LISTS = [
    ([0.3, -1.2, 2.0, 0.7, -0.1], [2, 0, 1, 0, 3]),
    ([1.5, 0.2, -0.4], [1, 0, 2]),
]


def batch(lists, dtype=torch.float64):
    """Pad [(scores, labels), ...] into (scores [B, L], y [B, L] with -1, mask [B, L])."""
    L = max(len(s) for s, _ in lists)
    s = torch.zeros(len(lists), L, dtype=dtype)
    y = torch.full((len(lists), L), -1.0, dtype=dtype)
    for b, (sc, lab) in enumerate(lists):
        s[b, : len(sc)] = torch.tensor(sc, dtype=dtype)
        y[b, : len(lab)] = torch.tensor(lab, dtype=dtype)
    return s, y, y >= 0


def pl_nll(scores, order):
    """-log Plackett-Luce probability of `order` (document indices, best first)."""
    total = 0.0
    for i in range(len(order)):
        rest = [scores[j] for j in order[i:]]
        total += math.log(sum(math.exp(v) for v in rest)) - scores[order[i]]
    return total


def label_consistent_orders(labels):
    n = len(labels)
    return [
        p
        for p in itertools.permutations(range(n))
        if all(labels[p[i]] >= labels[p[i + 1]] for i in range(n - 1))
    ]


def dcg_at(gains_by_position, k=None):
    k = len(gains_by_position) if k is None else k
    return sum(g / math.log2(r + 2) for r, g in enumerate(gains_by_position[:k]))


# --- ListMLE -------------------------------------------------------------------------


def test_listmle_equals_minus_log_plackett_luce_of_the_label_order_without_ties():
    lists = [([0.3, -1.2, 2.0, 0.7], [2, 0, 1, 3]), ([1.5, 0.2, -0.4], [1, 0, 2])]
    s, y, m = batch(lists)
    expected = np.mean(
        [pl_nll(sc, sorted(range(len(lab)), key=lambda i: -lab[i])) for sc, lab in lists]
    )
    for ties in ("random", "first"):
        assert float(listmle(s, y, m, ties=ties)) == pytest.approx(expected, rel=1e-12)


def test_listmle_with_ties_is_one_label_consistent_order_and_unbiased_for_their_mean():
    sc, lab = [0.3, -1.2, 2.0, 0.7, -0.5], [1, 0, 1, 0, 1]
    s, y, m = batch([(sc, lab)])
    values = {round(pl_nll(sc, p), 9) for p in label_consistent_orders(lab)}
    mean_over_orders = np.mean([pl_nll(sc, p) for p in label_consistent_orders(lab)])
    torch.manual_seed(0)
    draws = np.array([float(listmle(s, y, m)) for _ in range(3000)])
    assert {round(v, 9) for v in draws} <= values
    assert len(set(np.round(draws, 9))) > 1  # ties really are shuffled
    stderr = draws.std() / math.sqrt(draws.size)
    assert abs(draws.mean() - mean_over_orders) < 4 * stderr


def test_listmle_gradcheck_and_one_document_query_has_zero_loss():
    s, y, m = batch([([0.1, 0.5, -0.3], [0, 2, 1]), ([0.4], [1])])
    s.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: listmle(t, y, m, ties="first"), (s,))
    s1, y1, m1 = batch([([0.4], [1])])
    s1.requires_grad_(True)
    loss = listmle(s1, y1, m1)
    loss.backward()
    assert loss.item() == 0.0 and torch.isfinite(s1.grad).all()


# --- LambdaLoss ----------------------------------------------------------------------


def lambdaloss_reference(sc, lab, scheme, k=None, sigma=1.0, mu=10.0, log=math.log2):
    """One query's LambdaLoss by explicit loops over pairs (reduction sum)."""
    n = len(sc)
    order = sorted(range(n), key=lambda i: -sc[i])  # distinct scores in the tests
    rank = {d: r + 1 for r, d in enumerate(order)}
    ideal = sorted(lab, reverse=True)
    idcg = dcg_at([2.0**v - 1 for v in ideal], k)
    G = [(2.0**v - 1) / max(idcg, 1e-10) for v in lab]
    D = [math.log2(1 + rank[i]) for i in range(n)]
    total = 0.0
    for i in range(n):
        for j in range(n):
            if scheme != "ndcgLoss1" and not lab[i] > lab[j]:
                continue
            if k is not None and not (rank[i] <= k and rank[j] <= k):
                continue
            gap = abs(rank[i] - rank[j])
            delta = abs(1 / math.log2(1 + gap) - 1 / math.log2(2 + gap)) if gap else 0.0
            w = {
                "rankNet": 1.0,
                "ndcgLoss1": G[i] / D[i],
                "ndcgLoss2": delta * abs(G[i] - G[j]),
                "lambdaRank": abs(1 / D[i] - 1 / D[j]) * abs(G[i] - G[j]),
                "ndcgLoss2++": mu * delta * abs(G[i] - G[j])
                + abs(1 / D[i] - 1 / D[j]) * abs(G[i] - G[j]),
                "rankNetWeightedByGTDiff": abs(lab[i] - lab[j]),
                "rankNetWeightedByGTDiffPowed": abs(lab[i] ** 2 - lab[j] ** 2),
            }[scheme]
            p = 1 / (1 + math.exp(-sigma * (sc[i] - sc[j])))
            total += -w * log(p)
    return total


@pytest.mark.parametrize("scheme", WEIGHING_SCHEMES)
@pytest.mark.parametrize("k", [None, 3])
def test_lambdaloss_matches_the_pairwise_formula_for_every_weighing_scheme(scheme, k):
    s, y, m = batch(LISTS)
    got = float(lambdaloss(s, y, m, weighing_scheme=scheme, k=k, sigma=0.7, mu=5.0))
    expected = np.mean(
        [lambdaloss_reference(sc, lab, scheme, k=k, sigma=0.7, mu=5.0) for sc, lab in LISTS]
    )
    assert got == pytest.approx(expected, rel=1e-10, abs=1e-12)


def test_lambdaloss_natural_log_and_mean_reduction():
    s, y, m = batch(LISTS[:1])
    sc, lab = LISTS[0]
    n_pairs = sum(1 for a in lab for b in lab if a > b)
    expected = lambdaloss_reference(sc, lab, "lambdaRank", log=math.log) / n_pairs
    got = lambdaloss(
        s, y, m, weighing_scheme="lambdaRank", reduction="mean", reduction_log="natural"
    )
    assert float(got) == pytest.approx(expected, rel=1e-10)


def test_lambdarank_weight_is_the_ndcg_change_of_swapping_the_two_documents():
    from ltr_bench_neural.losses._ndcg_terms import ranks_by_score
    from ltr_bench_neural.losses.lambdaloss import pair_weights

    sc, lab = LISTS[0]
    s, y, m = batch([(sc, lab)])
    w = pair_weights("lambdaRank", y, m, ranks_by_score(s, m), None, 10.0)[0]
    qid = np.zeros(len(sc))
    base = evaluate(np.array(lab), np.array(sc), qid, "ndcg@5")["ndcg@5"]
    for i, j in itertools.combinations(range(len(sc)), 2):
        swapped = list(sc)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        after = evaluate(np.array(lab), np.array(swapped), qid, "ndcg@5")["ndcg@5"]
        assert float(w[i, j]) == pytest.approx(abs(after - base), abs=1e-12)


def test_lambdaloss_gradcheck_and_padding_does_not_change_the_value():
    s, y, m = batch(LISTS)
    s.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda t: lambdaloss(t, y, m, weighing_scheme="ndcgLoss2++"), (s,)
    )
    alone = lambdaloss(*batch(LISTS[1:]), weighing_scheme="ndcgLoss2++")
    padded = lambdaloss(*batch([LISTS[1], LISTS[1], ([9.0] * 5, [0] * 5)]))
    # the all-zero third query has no y_i > y_j pair: it adds 0 to a mean over 3 queries
    assert float(padded) == pytest.approx(2 * float(alone) / 3, rel=1e-12)


# --- ApproxNDCG ----------------------------------------------------------------------


def test_approxndcg_matches_the_smoothed_position_formula():
    s, y, m = batch(LISTS)
    alpha = 1.3
    values = []
    for sc, lab in LISTS:
        idcg = dcg_at([2.0**v - 1 for v in sorted(lab, reverse=True)])
        total = 0.0
        for i in range(len(sc)):
            pos = 1 + sum(
                1 / (1 + math.exp(-alpha * (sc[j] - sc[i]))) for j in range(len(sc)) if j != i
            )
            total += (2.0 ** lab[i] - 1) / math.log2(1 + pos)
        values.append(total / idcg)
    assert float(approxndcg(s, y, m, alpha=alpha)) == pytest.approx(-np.mean(values), rel=1e-12)


def test_approxndcg_tends_to_exact_ndcg_as_alpha_grows():
    s, y, m = batch(LISTS)
    exact = np.mean(
        [
            evaluate(np.array(lab), np.array(sc), np.zeros(len(sc)), "ndcg@5")["ndcg@5"]
            for sc, lab in LISTS
        ]
    )
    assert -float(approxndcg(s, y, m, alpha=1e3)) == pytest.approx(exact, abs=1e-9)
    assert abs(-float(approxndcg(s, y, m, alpha=1.0)) - exact) > 1e-3  # it is a relaxation


def test_approxndcg_gradcheck():
    s, y, m = batch(LISTS)
    s.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: approxndcg(t, y, m, alpha=2.0), (s,))


# --- NeuralNDCG ----------------------------------------------------------------------


def test_neural_sort_rows_follow_the_definition():
    sc = [0.3, -1.2, 2.0, 0.7]
    s, y, m = batch([(sc, [0, 1, 2, 3]), ([0.5, 0.1], [1, 0])])
    tau = 0.8
    p = neural_sort(s, m, tau)[0]
    n = len(sc)
    for i in range(1, n + 1):
        logits = [
            ((n + 1 - 2 * i) * sc[j] - sum(abs(sc[j] - sc[l]) for l in range(n))) / tau
            for j in range(n)
        ]
        z = sum(math.exp(v) for v in logits)
        for j in range(n):
            assert float(p[i - 1, j]) == pytest.approx(math.exp(logits[j]) / z, rel=1e-12)
    short = neural_sort(s, m, tau)[1]  # a 2-document query inside a 4-wide batch
    assert float(short[2:].abs().sum()) == 0.0 and float(short[:, 2:].abs().sum()) == 0.0
    assert torch.allclose(short[:2].sum(dim=-1), torch.ones(2, dtype=torch.float64))


def test_sinkhorn_makes_each_query_block_doubly_stochastic():
    s, y, m = batch(LISTS)
    p = sinkhorn(neural_sort(s, m, 1.0, log=True), m)
    for b, (sc, _) in enumerate(LISTS):
        n = len(sc)
        block = p[b, :n, :n]
        assert torch.allclose(block.sum(0), torch.ones(n, dtype=block.dtype), atol=1e-5)
        assert torch.allclose(block.sum(1), torch.ones(n, dtype=block.dtype), atol=1e-5)


@pytest.mark.parametrize("k", [None, 1, 3])
def test_neuralndcg_tends_to_exact_ndcg_as_the_temperature_goes_to_zero(k):
    s, y, m = batch(LISTS)
    key = f"ndcg@{k or 5}"
    exact = np.mean(
        [evaluate(np.array(lab), np.array(sc), np.zeros(len(sc)), key)[key] for sc, lab in LISTS]
    )
    assert -float(neuralndcg(s, y, m, temperature=1e-3, k=k)) == pytest.approx(exact, abs=1e-9)


def test_neuralndcg_unpowered_relevancies_use_the_labels_as_gains():
    sc, lab = LISTS[0]
    s, y, m = batch([(sc, lab)])
    by_score = [lab[i] for i in sorted(range(len(sc)), key=lambda i: -sc[i])]
    exact = dcg_at(by_score) / dcg_at(sorted(lab, reverse=True))
    got = -float(neuralndcg(s, y, m, temperature=1e-3, powered_relevancies=False))
    assert got == pytest.approx(exact, abs=1e-9)


def test_neuralndcg_skips_queries_without_relevant_documents_and_stays_finite():
    s, y, m = batch([LISTS[0], ([0.2, 0.1, 0.9], [0, 0, 0])])
    alone = neuralndcg(*batch([LISTS[0]]))
    assert float(neuralndcg(s, y, m)) == pytest.approx(float(alone), rel=1e-12)
    s0, y0, m0 = batch([([0.2, 0.1], [0, 0])])
    s0.requires_grad_(True)
    loss = neuralndcg(s0, y0, m0)
    loss.backward()
    assert loss.item() == 0.0 and torch.isfinite(s0.grad).all()


def test_neuralndcg_gradcheck():
    s, y, m = batch(LISTS)
    s.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda t: neuralndcg(t, y, m, temperature=1.0, max_iter=5, tol=0.0), (s,)
    )


# --- pointwise: bce, ordinal, rmse ---------------------------------------------------


def test_bce_on_logits_and_on_probabilities_is_the_summed_cross_entropy_per_query():
    s, y, m = batch(LISTS)
    per_query = []
    for sc, lab in LISTS:
        total = 0.0
        for v, t in zip(sc, lab, strict=True):
            p, t = 1 / (1 + math.exp(-v)), min(t, 1)
            total += -(t * math.log(p) + (1 - t) * math.log(1 - p))
        per_query.append(total)
    assert float(bce(s, y, m)) == pytest.approx(np.mean(per_query), rel=1e-12)
    assert float(bce(torch.sigmoid(s), y, m, logits=False)) == pytest.approx(
        np.mean(per_query), rel=1e-10
    )
    with pytest.raises(ValueError, match="Sigmoid"):
        bce(s, y, m, logits=False)


def test_ordinal_is_binary_cross_entropy_against_cumulative_label_indicators():
    sc, lab = LISTS[0]
    rng = np.random.default_rng(0)
    probs = rng.uniform(0.05, 0.95, size=(1, len(sc), 3))
    _, y, m = batch([(sc, lab)])
    expected = 0.0
    for i, label in enumerate(lab):
        for c in range(1, 4):
            p, t = probs[0, i, c - 1], float(label >= c)
            expected += -(t * math.log(p) + (1 - t) * math.log(1 - p))
    got = ordinal(torch.tensor(probs), y, m, n=3)
    assert float(got) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="d_output"):
        ordinal(torch.tensor(probs[..., 0]), y, m)


def test_rmse_is_the_root_mean_squared_error_per_query():
    s, y, m = batch(LISTS)
    per_query = [
        math.sqrt(np.mean([(t - 4 * v) ** 2 for v, t in zip(sc, lab, strict=True)]))
        for sc, lab in LISTS
    ]
    got = rmse(s, y, m, no_of_levels=4)
    assert float(got) == pytest.approx(np.mean(per_query), rel=1e-9)


def test_every_allrank_loss_refuses_design_paper_weights():
    s, y, m = batch(LISTS)
    for fn in (listmle, lambdaloss, approxndcg, neuralndcg, bce, rmse):
        with pytest.raises(ValueError, match="takes no weights"):
            fn(s, y, m, weights=torch.ones_like(s))


def test_neuralndcg_gradient_stays_finite_in_float32_when_columns_underflow():
    gen = torch.Generator().manual_seed(0)
    s = (30.0 * torch.randn(3, 40, generator=gen)).requires_grad_(True)
    y = torch.randint(0, 3, (3, 40), generator=gen).float()
    y[2, 25:] = -1.0  # a shorter query
    y[1] = 0.0  # and one without a relevant document
    loss = neuralndcg(s, y, y >= 0, temperature=0.1)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(s.grad).all()
