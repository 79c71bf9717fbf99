"""A resolved click configuration as a record's ``dataset_identity["clicks"]`` holds it (the
shape :func:`ltr_bench.clicks.options.resolve_click_options` gives), for report tests that
build click-trained records by hand."""

from __future__ import annotations


def resolved_pbm(**over) -> dict:
    """Position-based clicks, ``eta = 1``, the protocol's defaults; ``over`` replaces keys."""
    return {
        "model": {"name": "pbm", "args": {"eta": 1.0, "eps": 0.1}},
        "sessions": 10,
        "top_k": 10,
        "aggregate": "count",
        "logging_fraction": 0.01,
        "logging_ranker": {"name": "ridge"},
        **over,
    }
