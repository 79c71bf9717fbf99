"""Evaluation: pure numpy metrics per query and what decides their numbers.

Owns the metrics (:mod:`.metrics`: NDCG, MAP, MRR, ERR, P@k, recall@k, with their formulas),
the metric-key table (:mod:`.metric_keys`), the convention profiles that reproduce the LETOR
3.0/4.0 scripts and trec_eval (:mod:`.conventions`) and paired statistics (:mod:`.stats`).

May import the root contract only. Does no I/O. Rankers (baselines, plugins) may import it.
"""
