"""``neural`` with the allRank-style scorers: the ranker contract, multi-output scoring, memory."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ltr_bench.testing import check_ranker, make_check_data  # noqa: E402
from ltr_bench_neural.ranker import NeuralRanker  # noqa: E402
from ltr_bench_neural.scorers import transformer as transformer_module  # noqa: E402


@pytest.mark.parametrize(
    ("scorer", "loss", "args"),
    [
        ("mlp", "neuralndcg", {"sizes": [8]}),
        pytest.param(
            "transformer",
            "lambdaloss",
            {"sizes": [8], "h": 2, "d_ff": 16},
            marks=pytest.mark.slow,  # 10-20 s of checks with coverage
        ),
    ],
)
def test_neural_with_allrank_scorers_passes_check_ranker(scorer, loss, args):
    ranker = NeuralRanker(
        scorer=scorer, loss=loss, optimizer="adam", epochs=3, batch_size=8, scorer_args=args
    )
    check_ranker(ranker)


def test_every_document_of_a_long_test_query_gets_a_score_in_input_order():
    X, y, qid = make_check_data(n_queries=12)
    ranker = NeuralRanker(
        scorer="transformer",
        loss="listmle",
        optimizer="adam",
        epochs=2,
        slate_length=4,
        scorer_args={"sizes": [8], "dropout": 0.0},
        random_state=0,
    ).fit(X, y, qid=qid)
    first = qid == qid[0]
    whole = ranker.predict(X, qid=qid)
    perm = np.r_[np.flatnonzero(first)[::-1], np.flatnonzero(~first)]
    reversed_scores = ranker.predict(X[perm], qid=qid[perm])
    # the slate bounded training lists to 4 documents; prediction scored all of them, and
    # without positional encoding the scores follow the documents, not their positions
    assert first.sum() > 4
    np.testing.assert_allclose(reversed_scores, whole[perm], rtol=1e-6, atol=1e-9)


def test_a_transformer_batch_that_cannot_fit_in_memory_is_refused_naming_the_settings(
    monkeypatch,
):
    monkeypatch.setattr(transformer_module, "_available_bytes", lambda device: 2**20)
    X, y, qid = make_check_data(n_queries=12)
    ranker = NeuralRanker(
        scorer="transformer",
        loss="listmle",
        optimizer="adam",
        epochs=1,
        batch_size=8,
        scorer_args={"N": 4, "h": 4, "sizes": [32], "d_ff": 512},
    )
    with pytest.raises(MemoryError, match=r"lower batch_size \(now 8\) or slate_length"):
        ranker.fit(X, y, qid=qid)


def test_log1p_feature_transform_is_the_same_as_training_on_transformed_features():
    X, y, qid = make_check_data(n_queries=10)
    X = X * 100.0
    args = dict(scorer="mlp", loss="listnet", optimizer="adam", epochs=3, random_state=0)
    with_transform = NeuralRanker(feature_transform="log1p", **args).fit(X, y, qid=qid)
    Xt = np.sign(X) * np.log1p(np.abs(X))
    by_hand = NeuralRanker(**args).fit(Xt, y, qid=qid)
    np.testing.assert_array_equal(with_transform.predict(X), by_hand.predict(Xt))
    assert not np.array_equal(
        with_transform.predict(X), NeuralRanker(**args).fit(X, y, qid=qid).predict(X)
    )
    with pytest.raises(ValueError, match="feature transform"):
        NeuralRanker(feature_transform="log").validate_params()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"scorer": "mlp", "scorer_args": {"activation": "Relu7"}}, "Did you mean: ReLU"),
        ({"scorer": "transformer", "scorer_args": {"output_activation": "tanhh"}}, "Tanh"),
        ({"lr_scheduler": "StepLRR"}, r"unknown scheduler 'StepLRR' \(did you mean StepLR"),
        ({"lr_scheduler": "StepLR", "lr_scheduler_args": {"steps": 1}}, "not an argument"),
    ],
)
def test_unknown_activation_or_scheduler_names_are_refused_before_any_data(params, match):
    with pytest.raises(ValueError, match=match):
        NeuralRanker(**params).validate_params()
