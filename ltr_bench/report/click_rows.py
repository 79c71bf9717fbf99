"""Comparing rows trained on simulated clicks with rows on the true labels of the same folds.

Click data (:mod:`ltr_bench.clicks`) replaces the training and validation labels by clicks and
keeps the test labels, so a click-trained ranker and its full-information skyline differ in
their train / vali fingerprints by design and share the test split. The report compares them
when the test fingerprints agree (:func:`same_data`) and says so in a note
(:func:`click_comparison_note`).
"""

from __future__ import annotations

from ltr_bench.results import ResultRecord
from ltr_bench.results.labels import value_text

__all__ = [
    "click_comparison_note",
    "click_differences",
    "click_text",
    "clicks_of",
    "same_clicks_notes",
    "same_data",
]


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


def _value(v) -> str:
    return value_text(v)


def click_text(clicks) -> str:
    """A resolved click configuration in words, every option of the protocol named:
    ``clicks pbm(eps=0.1, eta=1.0), 10 sessions, top 10, click counts, logging ranker ridge
    fitted on 1% of the training queries`` ("true labels" for None)."""
    if not clicks:
        return "true labels"
    model = clicks.get("model", {})
    args = ", ".join(f"{k}={_value(v)}" for k, v in sorted((model.get("args") or {}).items()))
    top = clicks.get("top_k")
    aggregate = {"count": "click counts", "any": "clicked or not (aggregate=any)"}.get(
        clicks.get("aggregate"), f"aggregate={clicks.get('aggregate', '?')}"
    )
    fraction = clicks.get("logging_fraction")
    share = "?" if fraction is None else f"{100 * float(fraction):g}%"
    return (
        f"clicks {model.get('name', '?')}({args}), {clicks.get('sessions')} sessions, "
        + ("every document shown" if top == 0 else f"top {top}")
        + f", {aggregate}, logging ranker {(clicks.get('logging_ranker') or {}).get('name', '?')} "
        f"fitted on {share} of the training queries"
    )


def _flat(value, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): _value(value)}


def click_differences(a, b) -> str:
    """What two resolved click configurations differ in, every option named
    (``logging_fraction 0.1 / 0.01; model.args.eta 1.0 / 2.0``); "" when alike."""
    fa, fb = _flat(a or {}), _flat(b or {})
    keys = sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))
    return "; ".join(f"{k} {fa.get(k, '-')} / {fb.get(k, '-')}" for k in keys)


def click_comparison_note(label: str, mine: dict, base_label: str, base: dict) -> str:
    """The note that says a row was trained on other (click) data than the baseline and is
    compared on the same test labels; between two click configurations it names every
    option in which they differ."""
    u = sorted(set(mine) & set(base))[0]
    a, b = clicks_of(mine[u]), clicks_of(base[u])
    differ = click_differences(a, b) if a and b else ""
    return (
        f"{label} was trained on {click_text(a)} and {base_label} on {click_text(b)} of the "
        "same folds"
        + (f" (they differ in {differ}, {label} first)" if differ else "")
        + "; they are compared on the same test split (true relevance labels, fingerprints "
        "equal)"
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
        f"{click_text(clicks)} (training and validation labels are simulated clicks; test "
        "labels the true relevance)"
    ]
