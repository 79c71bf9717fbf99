"""Reports: tables, paired tests, text/markdown, HTML, plots and cross-dataset ranks.

Owns the comparison table of results (:mod:`.tables`), its text/markdown rendering
(:mod:`.text`), the HTML page (:mod:`.html`), plots (:mod:`.plots`), the multi-dataset
ranks with the critical-difference diagram (:mod:`.multi`) and the published results shown
beside ours (:mod:`.published`: a table shipped as package data). Pure: reads results records
and the evaluation conventions; may import the root contract, ``evaluation`` and ``results``
(and, to check the published table's dataset names and fold counts, the dataset registry
:mod:`ltr_bench.data.specs`, which reads no data). Never retrains anything and never imports
``run``, ``tune`` or ``tracking``.
"""
