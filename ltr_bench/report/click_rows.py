"""Comparing rows trained on simulated clicks with rows on the true labels of the same folds.

Click data (:mod:`ltr_bench.clicks`) replaces the training and validation labels by clicks and
keeps the test labels, so a click-trained ranker and its full-information skyline differ in
their train / vali fingerprints by design and share the test split. The report compares them
when the test fingerprints agree (:func:`same_data`) and says so in a note
(:func:`click_comparison_note`).
"""

from __future__ import annotations

from ltr_bench.results import ResultRecord

__all__ = ["click_comparison_note", "clicks_of", "same_clicks_notes", "same_data"]


def clicks_of(record: ResultRecord):
    """The run's resolved click configuration, or None when it trained on true labels."""
    return (record.dataset_identity or {}).get("clicks") or None


def same_data(a: ResultRecord, b: ResultRecord) -> bool:
    """Whether two results of one fold and seed saw the same data, by split fingerprints.

    With the same data variant (the same click configuration, ``dataset_identity["clicks"]``,
    None for true labels, and the same dataset identity) every split must agree. Across
    variants -- the skyline on true labels against rankers trained on simulated clicks, two
    click settings, or two subsamples of the training queries (``train_queries``) -- the
    training and validation splits differ by design, and the test split, true relevance in
    every case, must agree: such rows are judged on the same test labels."""
    fa, fb = a.fingerprints, b.fingerprints
    if clicks_of(a) == clicks_of(b) and a.dataset_identity == b.dataset_identity:
        return tuple(sorted(fa.items())) == tuple(sorted(fb.items()))
    return fa.get("test") is not None and fa.get("test") == fb.get("test")


def _click_text(clicks) -> str:
    if not clicks:
        return "true labels"
    model = clicks.get("model", {})
    args = ", ".join(f"{k}={v}" for k, v in sorted((model.get("args") or {}).items()))
    return (
        f"clicks {model.get('name', '?')}({args}), {clicks.get('sessions')} sessions, "
        f"top {clicks.get('top_k')}, logging ranker "
        f"{(clicks.get('logging_ranker') or {}).get('name', '?')}"
    )


def click_comparison_note(label: str, mine: dict, base_label: str, base: dict) -> str:
    """The note that says a row was trained on other (click) data than the baseline and is
    compared on the same test labels."""
    u = sorted(set(mine) & set(base))[0]
    return (
        f"{label} was trained on {_click_text(clicks_of(mine[u]))} and {base_label} on "
        f"{_click_text(clicks_of(base[u]))} of the same folds; they are compared on the same "
        "test split (true relevance labels, fingerprints equal)"
    )


def same_clicks_notes(chosen: list, by_unit: dict, labels: dict, base_ck) -> list[str]:
    """The note for the rows trained on the baseline's own clicks (no comparison note says
    it): without it a table of click-trained rows reads like one on true labels."""
    base = next(iter(by_unit[base_ck].values()))
    clicks = clicks_of(base)
    same = [labels[c] for c in chosen if clicks_of(next(iter(by_unit[c].values()))) == clicks]
    if not same or not clicks:
        return []
    return [
        f"{', '.join(same)} {'was' if len(same) == 1 else 'were'} trained on "
        f"{_click_text(clicks)} (training and validation labels are simulated clicks; test "
        "labels the true relevance)"
    ]
