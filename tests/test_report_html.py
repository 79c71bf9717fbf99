"""report_html: the shared HTML report, as a person sees it in a real browser.

The browser test drives Debian's Chromium through Playwright. It is skipped where either
is missing, except when ``LTR_BENCH_REQUIRE_BROWSER=1`` (CI sets it), where a missing
browser fails the test instead of hiding it.
"""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.report import plots
from ltr_bench.report.html import to_html
from ltr_bench.report.tables import build_report
from ltr_bench.results import ResultRecord


def _report():
    rng = np.random.default_rng(0)
    runs = []
    for i, name in enumerate(["lightgbm", "ridge", "lgmml"]):
        for f in (1, 2, 3):
            v = np.clip(0.3 + 0.1 * i + rng.normal(0, 0.05, size=30), 0, 1)
            metrics = {f"ndcg@{k}": float(v.mean() + 0.001 * k) for k in (1, 5, 10)}
            runs.append(
                ResultRecord(
                    key=f"{name}{f}",
                    plan_key=name,
                    config_key=name,
                    ranker=name,
                    label=name,
                    dataset="toy",
                    fold=f,
                    seed=0,
                    metrics=metrics,
                    per_query={
                        "qid": list(range(30)),
                        **{m: (v + 0.001 * int(m.split("@")[1])).tolist() for m in metrics},
                    },
                    fit_seconds=0.5 * (i + 1),
                    score_us_per_doc=1.0 + i,
                    fingerprints={"train": f"tr{f}", "vali": f"va{f}", "test": f"te{f}"},
                    config={"command": "ltr-bench run --ranker lightgbm,ridge,lgmml --dataset toy"},
                    environment={
                        "versions": {"numpy": np.__version__},
                        "cpu_model": "test CPU",
                        "cpu_count": 2,
                    },
                    n_threads=1,
                )
            )
    return build_report(runs, dataset="toy")


def test_the_page_is_self_contained_with_the_best_values_marked(tmp_path):
    report = _report()
    page = to_html(report, plots=plots.write_plots(report, tmp_path))
    assert page.count("data:image/png;base64,") == 3
    assert "http://" not in page and "https://" not in page and "<script" not in page
    assert "ltr-bench run --ranker lightgbm,ridge,lgmml --dataset toy" in page
    best = report.row("lgmml").cells["ndcg@10"].mean
    assert f"<td class=best>{best:.4f}" in page


@pytest.mark.slow
def test_a_person_sees_the_table_the_marks_and_the_figures_in_chromium(tmp_path, chromium):
    from playwright.sync_api import sync_playwright

    report = _report()
    path = tmp_path / "report.html"
    path.write_text(to_html(report, plots=plots.write_plots(report, tmp_path / "plots")))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(path.as_uri())
        assert page.title() == "ltr-bench report: toy"
        assert page.locator("h1").inner_text().startswith("toy: 3 ranker(s)")
        rows = page.locator("table.results tbody tr")
        assert rows.count() == 3
        assert rows.nth(0).locator("td").nth(0).inner_text() == "lightgbm (baseline)"
        # the best NDCG@10 is bold and visible; significant wins show their mark
        best = page.locator("table.results td.best").first
        assert best.is_visible()
        assert int(best.evaluate("e => getComputedStyle(e).fontWeight")) >= 700
        assert page.locator("table.results .win").count() >= 1
        # every figure decoded and drawn at a readable size
        images = page.locator("figure img")
        assert images.count() == 3
        for i in range(3):
            width = images.nth(i).evaluate("img => img.complete ? img.naturalWidth : 0")
            shown = images.nth(i).bounding_box()
            assert width > 500 and shown["width"] > 400
        # nothing but the wide table scrolls sideways
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert (tmp_path / "report.png").stat().st_size > 50_000
