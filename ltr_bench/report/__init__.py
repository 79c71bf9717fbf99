"""Reports: tables, paired tests, text/markdown, HTML, plots and cross-dataset ranks.

Owns the comparison table of results (:mod:`.tables`), its text/markdown rendering
(:mod:`.text`), the HTML page (:mod:`.html`), plots (:mod:`.plots`) and the multi-dataset
ranks with the critical-difference diagram (:mod:`.multi`). Pure: reads results records and
the evaluation conventions; may import the root contract, ``evaluation`` and ``results``.
Never retrains anything and never imports ``run``, ``tune`` or ``tracking``.
"""
