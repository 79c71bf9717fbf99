"""The HTML report the MLflow logging process attaches to the parent runs at the end of
``ltr-bench run --attach-report`` (:mod:`ltr_bench.cli.mlflow_process`)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["attach_html_reports", "warm_up_report"]


def warm_up_report() -> None:
    """Import and read what the HTML report needs (matplotlib, SciPy's statistics, the
    published table: ~1 s) while the run computes, not after it."""
    try:
        import scipy.stats  # noqa: F401 - the paired tests import it on first use (~0.9 s)

        from ltr_bench.report import html, tables  # noqa: F401
        from ltr_bench.report.plots import _plt
        from ltr_bench.report.published.table import load_published

        _plt()
        load_published()  # parsed once per process
    except Exception:  # noqa: BLE001, S110 - the report says it later, if it still fails
        pass


def attach_html_reports(store, report_units: dict[str, list], listener, note) -> None:
    """Each dataset's HTML report on its parent runs: every result in the store on the folds
    and seeds of this run (so, on the same data, what it can be compared with)."""
    import tempfile

    from ltr_bench.errors import LtrBenchError
    from ltr_bench.report.html import to_html
    from ltr_bench.report.plots import write_plots
    from ltr_bench.report.tables import build_report

    for dataset in sorted(report_units):
        units = {tuple(u) for u in report_units[dataset]}
        recs = [
            r for r in store.records() if r.dataset == dataset and (r.fold, r.seed) in units
        ]  # what is comparable with this run
        for r in recs:
            store.per_query(r)
        try:
            with tempfile.TemporaryDirectory(prefix="ltr-bench-report-") as tmp:
                rep = build_report(recs, dataset=dataset)
                path = Path(tmp) / "report.html"
                path.write_text(to_html(rep, plots=write_plots(rep, tmp)), encoding="utf-8")
                listener.attach_report(dataset, path)
        except (LtrBenchError, ValueError, OSError) as exc:
            note(f"note: no HTML report attached for {dataset}: {exc}")
