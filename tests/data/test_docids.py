"""Document ids from LETOR comments (``#docid = ...``): read by the whole-file and the streamed
reader, kept through regrouping and the parsed-data cache (an entry of the earlier format never
answers), named uniquely inside a query, and written into TREC runs and qrels."""

from __future__ import annotations

import lzma
import re

import numpy as np
import pytest
from ltrb_data_helpers import good_lines, write_lines

from ltr_bench.data import load_fold, reader
from ltr_bench.data.cache import cache_key, source_signature, write_entry
from ltr_bench.data.docids import block_docids
from ltr_bench.data.loading import load_letor_split
from ltr_bench.data.stream import iter_query_chunks
from ltr_bench.folds import doc_names
from ltr_bench.results import qrels_text, trec_run_text

MQ_LINES = [  # LETOR 4.0 (MQ2007): the id is followed by other fields of the comment
    "2 qid:10032 1:0.05 2:0.5 #docid = GX029-35-5894638 inc = 0.0119881192468859 prob = 0.13",
    "0 qid:10032 1:0.3 2:0.1 #docid = GX030-77-6315042 inc = 1 prob = 0.34",
    "1 qid:10033 1:0.7 2:0.2 #docid=GX004-93-7097963 inc = 1 prob = 0.2",
]


def _ids(values) -> list[str]:
    return [v.decode() for v in np.asarray(values).tolist()]


def test_letor4_comment_ids_are_read_up_to_the_next_blank(tmp_path):
    parsed = reader.read_letor_file(
        write_lines(tmp_path / "mq.txt", MQ_LINES), n_features=2, label_max=2
    )
    assert _ids(parsed.docid) == ["GX029-35-5894638", "GX030-77-6315042", "GX004-93-7097963"]


def test_a_file_with_a_line_without_an_id_has_no_ids_and_comment_lines_are_not_rows(tmp_path):
    lines = ["# a header comment", *MQ_LINES[:2], "1 qid:10033 1:0.7 2:0.2 # no id here"]
    parsed = reader.read_letor_file(write_lines(tmp_path / "a.txt", lines), n_features=2)
    assert parsed.docid is None and parsed.n_rows == 3
    assert block_docids(b"# only a comment\n\n") == []
    assert block_docids(b"1 qid:1 1:0.5\n") is None  # MSLR-style: no comment at all


def test_ids_follow_the_rows_when_a_split_query_is_regrouped_and_blocks_are_tiny(
    tmp_path, monkeypatch
):
    lines = good_lines(n_queries=3, docs=3)
    lines = lines[:2] + lines[3:] + lines[2:3]  # query 1's third row comes last
    monkeypatch.setattr(reader, "BLOCK_BYTES", 40)  # ids are read block by block
    with pytest.warns(Warning, match="continue here"):
        parsed = reader.read_letor_file(write_lines(tmp_path / "a.txt", lines), n_features=5)
    # good_lines writes doc d of query q as id q*100+d: the ids must still name their rows
    want = [f"{q * 100 + d}" for q, d in zip(parsed.qid.tolist(), [0, 1, 2] * 3)]
    assert _ids(parsed.docid) == want


def test_ohsumed_ids_are_the_files_own_comments(shared_data, tmp_path):
    folder = shared_data / "OHSUMED-LETOR3-Feature-min"
    fold = load_fold(folder, 1, cache_dir=tmp_path / "cache")
    with lzma.open(folder / "Fold1" / "testset.txt.xz", "rt") as fh:
        want = [re.search(r"#docid = (\S+)", line).group(1) for line in fh]
    assert _ids(fold.test.extras["docid"]) == want
    again = load_fold(folder, 1, cache_dir=tmp_path / "cache")  # from the cache, memory-mapped
    assert _ids(again.test.extras["docid"]) == want
    assert again.test.fingerprint == fold.test.fingerprint


def test_a_cache_entry_of_the_format_without_ids_never_answers(tmp_path):
    path = write_lines(tmp_path / "d.txt", good_lines(n_queries=2, docs=3))
    # the key the parsed-data cache gave this file before it held ids, with other data in it
    old_key = cache_key(
        {
            "kind": "letor",
            "src": source_signature(path),
            "query": None,
            "n_features": 5,
            "label_min": 0,
            "label_max": 2,
        }
    )

    def old_entry(writer):
        writer.save("X", np.full((6, 5), 7.0))
        writer.save("y", np.zeros(6, dtype=np.int64))
        writer.save("qid", np.ones(6, dtype=np.int64))
        return {"fingerprint": "old", "warnings": []}

    write_entry(tmp_path / "cache", "letor", old_key, old_entry)
    split = load_letor_split(
        "test", path, None, n_features=5, label_min=0, label_max=2, context="t",
        cache_dir=tmp_path / "cache",
    )  # fmt: skip
    assert not np.all(split.X == 7.0)
    assert _ids(split.extras["docid"]) == ["100", "101", "102", "200", "201", "202"]


def test_a_cache_entry_whose_ids_changed_is_rebuilt(tmp_path):
    path = write_lines(tmp_path / "d.txt", good_lines(n_queries=2, docs=3))
    kw = dict(n_features=5, label_min=0, label_max=2, context="t", cache_dir=tmp_path / "cache")
    load_letor_split("test", path, None, **kw)
    (ids_file,) = (tmp_path / "cache" / "letor").glob("*/docid.S3")
    ids_file.write_bytes(b"999" * 6)  # same size, other ids
    with pytest.warns(Warning, match="document ids"):
        split = load_letor_split("test", path, None, **kw)
    assert _ids(split.extras["docid"])[0] == "100"


def test_streamed_chunks_carry_the_same_ids_as_the_whole_file_reader(tmp_path, monkeypatch):
    lines = good_lines(n_queries=7, docs=4)
    path = write_lines(tmp_path / "d.txt", lines)
    whole = reader.read_letor_file(path, n_features=5)
    monkeypatch.setattr(reader, "BLOCK_BYTES", 200)  # several blocks, several chunks
    chunks = list(iter_query_chunks(path, n_features=5, chunk_rows=5))
    assert len(chunks) > 2
    assert _ids(np.concatenate([c.docid for c in chunks])) == _ids(whole.docid)
    # a line without an id further on: from there on, chunks have none
    lines[-1] = lines[-1].split("#")[0]
    chunks = list(iter_query_chunks(write_lines(path, lines), n_features=5, chunk_rows=5))
    assert chunks[0].docid is not None and chunks[-1].docid is None


def test_doc_names_number_a_repeated_id_within_its_query_and_default_to_positions():
    qid = np.array([1, 1, 1, 1, 2, 2])
    ids = np.array([b"a", b"b", b"a", b"a", b"a", b"a~2"])
    assert doc_names(qid, ids) == ["a", "b", "a~2", "a~3", "a", "a~2"]
    assert doc_names(qid) == ["0", "1", "2", "3", "4", "5"]
    with pytest.raises(ValueError, match="2 document ids for 6 rows"):
        doc_names(qid, ids[:2])


def test_run_and_qrels_name_documents_alike_and_ties_go_to_the_larger_id_first():
    qid = np.array([5, 5, 5, 9])
    ids = np.array([b"GX-1", b"GX-3", b"GX-2", b"GX-1"])
    run = trec_run_text(qid, [0.5, 0.5, 0.9, 0.1], tag="t", docid=ids).splitlines()
    assert [line.split()[2] for line in run] == ["GX-2", "GX-3", "GX-1", "GX-1"]
    assert run[0] == "5 Q0 GX-2 1 0.9 t"
    assert qrels_text(qid, [2, 0, 1, 0], docid=ids) == (
        "5 0 GX-1 2\n5 0 GX-3 0\n5 0 GX-2 1\n9 0 GX-1 0\n"
    )
    # without ids, the rows' positions, as before
    assert qrels_text(qid, [2, 0, 1, 0]).split("\n")[3] == "9 0 3 0"
