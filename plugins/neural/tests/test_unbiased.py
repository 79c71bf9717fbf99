"""``neural`` from clicks: the propensity-weighted losses by hand, IPS and DLA end to end."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.ranker import RankerInputError
from ltr_bench_neural.ranker import NeuralRanker
from ltr_bench_neural.unbiased import dla_propensity_loss, ips_softmax_loss

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "baselines"))
from test_unbiased_gbdt import _position_biased_clicks  # noqa: E402


def test_ips_softmax_loss_matches_the_hand_computed_case():
    # query 1: scores [0, ln 2] -> softmax [1/3, 2/3]; one click on the first document,
    # weight 1/p = 2: loss 2 ln 3. Query 2 (padded, no clicks) adds 0: mean ln 3.
    scores = torch.tensor([[0.0, math.log(2.0)], [5.0, 0.0]], dtype=torch.float64)
    clicks = torch.tensor([[1.0, 0.0], [0.0, -1.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True], [True, False]])
    weights = torch.tensor([[2.0, 1.0], [1.0, 0.0]], dtype=torch.float64)
    loss = ips_softmax_loss(scores, clicks, mask, weights)
    assert float(loss) == pytest.approx(math.log(3.0), rel=1e-12)


def test_ips_weights_scale_the_clicked_terms():
    # two clicks (counts 2 and 1) with weights 1 and 3 on three documents of equal score:
    # -(2 * 1 + 1 * 3) log(1/3) = 5 ln 3
    scores = torch.zeros((1, 3), dtype=torch.float64)
    clicks = torch.tensor([[2.0, 1.0, 0.0]], dtype=torch.float64)
    weights = torch.tensor([[1.0, 3.0, 7.0]], dtype=torch.float64)
    loss = ips_softmax_loss(scores, clicks, torch.ones((1, 3), dtype=torch.bool), weights)
    assert float(loss) == pytest.approx(5.0 * math.log(3.0), rel=1e-12)


def test_dla_propensity_loss_matches_the_hand_computed_case():
    # logits [0, ln 2] -> P(o_1) = 1/3, P(o_2) = 2/3; a click at position 2 with inverse
    # relevance weight 3: -3 ln(2/3). The third entry is not shown and is left out.
    logits = torch.tensor([0.0, math.log(2.0)], dtype=torch.float64)
    pos = torch.tensor([[1, 2, 0]])
    clicks = torch.tensor([[0.0, 1.0, 0.0]], dtype=torch.float64)
    shown = torch.tensor([[True, True, False]])
    r = torch.tensor([[1.0, 3.0, 0.0]], dtype=torch.float64)
    loss = dla_propensity_loss(logits, pos, clicks, shown, r)
    assert float(loss) == pytest.approx(-3.0 * math.log(2.0 / 3.0), rel=1e-12)


@pytest.mark.parametrize("mode", ["ips", "dla"])
def test_unbiased_declares_accepts_position(mode):
    assert NeuralRanker(unbiased=mode).ranker_tags().accepts_position is True
    assert NeuralRanker().ranker_tags().accepts_position is False
    assert NeuralRanker(unbiased="naive").ranker_tags().accepts_position is False


def test_naive_mode_is_ips_with_unit_propensities():
    # the uncorrected counterpart: the same objective, every weight 1
    X, _, qid, pos, clicks = _position_biased_clicks(np.random.default_rng(0), 30)
    common = dict(random_state=0, n_threads=1, epochs=5, dtype="float64")
    naive = NeuralRanker(unbiased="naive", **common).fit(X, clicks, qid=qid)
    ips = NeuralRanker(unbiased="ips", **common).fit(
        X, clicks, qid=qid, position=pos, propensity=np.ones(len(pos))
    )
    np.testing.assert_allclose(naive.predict(X), ips.predict(X), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(unbiased="ipw"), "unbiased must be one of none, naive, ips, dla"),
        (dict(unbiased="dla", optimizer="lbfgs"), "optimizer to adam"),
        (dict(unbiased="ipss"), "did you mean 'ips'"),
        (dict(unbiased="ips", loss="pl"), "leave loss at 'softmax'"),
        (dict(unbiased="ips", group="max"), "group='none'"),
    ],
)
def test_bad_unbiased_settings_are_refused_before_any_data(params, match):
    with pytest.raises(ValueError, match=match):
        NeuralRanker(**params).validate_params()


def test_unbiased_without_positions_is_a_clear_error():
    X, _, qid, _, clicks = _position_biased_clicks(np.random.default_rng(0), 4)
    with pytest.raises(RankerInputError, match="no positions.*clicks=pbm"):
        NeuralRanker(unbiased="ips", epochs=2).fit(X, clicks, qid=qid)


def test_ips_refuses_rows_without_a_propensity():
    X, _, qid, pos, clicks = _position_biased_clicks(np.random.default_rng(0), 4)
    propensity = np.full(len(pos), np.nan)
    with pytest.raises(RankerInputError, match="use unbiased='dla'"):
        NeuralRanker(unbiased="ips", epochs=2).fit(
            X, clicks, qid=qid, position=pos, propensity=propensity
        )


def test_ips_with_true_propensities_beats_naive_on_true_labels():
    rng = np.random.default_rng(0)
    X, _, qid, pos, clicks = _position_biased_clicks(rng, 300, eta=1.0)
    Xt, rel_t, qid_t, _, _ = _position_biased_clicks(rng, 200, eta=1.0)
    ndcg = {}
    for mode in ("naive", "ips"):
        model = NeuralRanker(unbiased=mode, random_state=0, n_threads=1, epochs=50)
        model.fit(X, clicks, qid=qid, position=pos, propensity=1.0 / pos)
        ndcg[mode] = evaluate(rel_t, model.predict(Xt), qid_t, ("ndcg@10",))["ndcg@10"]
    assert ndcg["ips"] > ndcg["naive"] + 0.02, ndcg


@pytest.mark.slow
def test_dla_propensities_approach_the_true_curve():
    # 1,000 queries of 10 documents, (1/rank)^1 examination, 10 sessions each. Uniform
    # propensities (no correction) are 0.68 off on ranks 2-5 on average; DLA's were
    # 0.13-0.23 off (three data seeds) after 30 epochs
    rng = np.random.default_rng(0)
    X, _, qid, pos, clicks = _position_biased_clicks(rng, 1000, eta=1.0)
    model = NeuralRanker(
        unbiased="dla",
        optimizer="adam",
        lr=0.01,
        epochs=30,
        patience=None,
        random_state=0,
        n_threads=1,
    )
    model.fit(X, clicks, qid=qid, position=pos)
    true = 1.0 / np.arange(1, 11)
    est = model.propensity_
    assert est.shape == (10,) and est[0] == pytest.approx(1.0)
    error = np.abs(est[1:5] - true[1:5]).mean()
    assert error < 0.3 * np.abs(1.0 - true[1:5]).mean(), (est, error)
    assert np.all(np.diff(est[:4]) < 0), est  # decreasing where most clicks are
    assert model.fitted_info()["propensity@2"] == pytest.approx(est[1])


@pytest.mark.parametrize("params", [dict(unbiased="ips"), dict(unbiased="dla", optimizer="adam")])
def test_unbiased_configuration_passes_the_position_check_of_the_conformance_suite(params):
    from ltr_bench.testing import ranker_checks

    checks = dict(ranker_checks(NeuralRanker(epochs=5, n_threads=1, **params)))
    checks["position_accepted"]()


def test_validating_an_unbiased_configuration_does_not_import_torch():
    import subprocess

    code = (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "from ltr_bench_neural.ranker import NeuralRanker\n"
        "NeuralRanker(unbiased='dla', optimizer='adam').validate_params()\n"
        "assert NeuralRanker(unbiased='ips').ranker_tags().accepts_position\n"
        "assert 'torch' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
