"""Naming the first bad line of a LETOR block: the slow path of :mod:`ltr_bench.data.reader`.

The reader checks whole blocks with vectorised numpy tests; only when scikit-learn's parser
raises or a test fails is the block scanned here, line by line in Python, for the first line
that breaks the format, with a message that quotes it and says how to fix it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ltr_bench.data.errors import DataError, FeatureIndexError

#: Widest row a file may have when the feature count is inferred (no ``n_features``): the
#: widest LETOR data (Yahoo! set 1) has 700 features; an index far beyond this is a damaged
#: file and would otherwise allocate an enormous dense matrix.
MAX_INFERRED_FEATURES = 1 << 16

_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


def shown(text, limit: int = 40) -> str:
    """``repr`` of a token from a file, cut to ``limit`` characters (messages stay short
    whatever the file holds)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"... ({len(text)} characters)"


FORMAT_HINT = (
    "Each line must read '<label> qid:<query id> <index>:<value> ... [# comment]' "
    "with 1-based, increasing feature indices."
)


def _fmt_label_range(label_min, label_max) -> str:
    if label_max is None:
        return f"integers >= {label_min}"
    return f"integers {label_min}..{label_max}"


def diagnose_block(
    block: bytes,
    first_line: int,
    path,
    *,
    n_features: int | None,
    label_min: int = 0,
    label_max: int | None = None,
    need_qid: bool = True,
    context: str = "this dataset",
    fixes: dict[str, str] | None = None,
) -> DataError | None:
    """Scan ``block`` line by line and return a :class:`DataError` for its first bad line.

    ``fixes`` replaces the advice of a message: ``"label"`` (a label out of range) and
    ``"qid"`` (a line without ``qid:``), for a reader that is not loading a dataset (e.g.
    ``predict``: no dataset option to set, no ``.query`` file read). A feature index beyond
    ``n_features`` is a :class:`~ltr_bench.data.errors.FeatureIndexError`.

    Only called after a fast check failed. Checks, in order on each line: the label parses,
    is finite, is an integer and is in ``label_min..label_max``; ``qid:`` is present (when
    ``need_qid``) and an integer; each feature is ``index:value`` with an integer index
    ``1 <= index <= n_features``, indices increasing, values finite numbers.
    Returns ``None`` when no line is bad (the caller then reports what the parser said).
    """
    where = Path(path)
    rng = _fmt_label_range(label_min, label_max)
    for offset, raw_line in enumerate(block.split(b"\n")):
        lineno = first_line + offset

        def err(what: str, fix: str) -> DataError:
            return DataError(f"{where}:{lineno}: {what}. {fix}", path=where, line=lineno)

        text = raw_line.split(b"#", 1)[0]
        tokens = text.split()
        if not tokens:
            continue
        label_tok = tokens[0].decode("utf-8", "replace")
        if ":" in label_tok:
            return err(
                f"the line starts with {shown(label_tok)} instead of a relevance label",
                FORMAT_HINT,
            )
        try:
            label = float(label_tok)
        except ValueError:
            return err(f"cannot parse the label {shown(label_tok)} as a number", FORMAT_HINT)
        if not math.isfinite(label):
            return err(
                f"the label is {shown(label_tok)}, not a finite number",
                f"Labels of {context} must be {rng}.",
            )
        if label != int(label):
            return err(
                f"the label {shown(label_tok)} is not an integer",
                f"Labels of {context} must be {rng} (graded relevance).",
            )
        if label < label_min or (label_max is not None and label > label_max):
            label_text = str(int(label)) if abs(label) < 1e15 else shown(label_tok)
            return err(
                f"the label {label_text} is outside the allowed range",
                (fixes or {}).get("label")
                or f"Labels of {context} must be {rng}; check that the file belongs to this "
                "dataset.",
            )
        feats = tokens[1:]
        if feats and feats[0].startswith(b"qid:"):
            qid_tok = feats[0][4:].decode("utf-8", "replace")
            try:
                qid_val = int(qid_tok)
            except ValueError:
                return err(
                    f"the query id {shown(qid_tok)} is not an integer",
                    "Write the query as qid:<integer>.",
                )
            if not _INT64_MIN <= qid_val <= _INT64_MAX:
                return err(
                    f"the query id {shown(qid_tok)} does not fit in 64 bits",
                    f"Query ids must lie in {_INT64_MIN}..{_INT64_MAX}; renumber the queries.",
                )
            feats = feats[1:]
        elif any(t.startswith(b"qid:") for t in feats):
            return err(
                "the qid: field is not directly after the label",
                "qid:<id> must be the second field of the line. " + FORMAT_HINT,
            )
        elif need_qid:
            return err(
                "the line has no qid: field after its label (missing query id)",
                (fixes or {}).get("qid")
                or "Every line needs 'qid:<query id>' right after the label; for "
                "LightGBM-style files without qid:, put the group sizes in a '.query' "
                "file next to the data file (e.g. rank.train.query for rank.train).",
            )
        prev = 0
        width = MAX_INFERRED_FEATURES if n_features is None else n_features
        for tok in feats:
            tok_s = tok.decode("utf-8", "replace")
            if tok.startswith(b"qid:"):
                return err(
                    f"{shown(tok_s)} is not directly after the label",
                    "qid:<id> must be the second field of the line. " + FORMAT_HINT,
                )
            idx_s, sep, val_s = tok_s.partition(":")
            if not sep:
                return err(f"cannot parse {shown(tok_s)} as index:value", FORMAT_HINT)
            try:
                idx = int(idx_s)
            except ValueError:
                return err(f"the feature index in {shown(tok_s)} is not an integer", FORMAT_HINT)
            if idx < 1:
                return err(
                    f"feature index {shown(idx_s)} in {shown(tok_s)}: indices are 1-based",
                    "Number features from 1 (LETOR convention); add 1 to every index "
                    "of a 0-based file.",
                )
            if idx > width:
                idx_text = str(idx) if len(idx_s) <= 20 else shown(idx_s)
                if n_features is not None:
                    return FeatureIndexError(
                        f"{where}:{lineno}: feature index {idx_text} is beyond the "
                        f"{n_features} features of {context}. Indices must be "
                        f"1..{n_features}; check that the file belongs to {context} (for a "
                        "folder path, pass the option n_features).",
                        path=where,
                        line=lineno,
                        index=idx,
                        n_features=n_features,
                    )
                return err(
                    f"feature index {idx_text} is beyond {MAX_INFERRED_FEATURES}, "
                    "the widest row accepted when the feature count is inferred",
                    "The file is probably damaged; if the data really is this wide, "
                    "pass the dataset option n_features.",
                )
            if idx <= prev:
                return err(
                    f"feature index {idx} comes after index {prev}",
                    "Feature indices within a line must be increasing and unique.",
                )
            prev = idx
            try:
                val = float(val_s)
            except ValueError:
                return err(
                    f"cannot parse the value of feature {idx} ({shown(val_s)}) as a number",
                    FORMAT_HINT,
                )
            if not math.isfinite(val):
                return err(
                    f"feature {idx} has the value {shown(val_s)} (NaN or infinite)",
                    "Replace missing or infinite values by a number (LETOR's "
                    "'Feature-min' versions use the feature's minimum) or drop the row.",
                )
    return None
