"""A new SQLite store starts as a copy of an empty one: MLflow's schema is built once per
MLflow version, not once per store.

Why. MLflow creates a new SQLite store by running its whole migration history (Alembic, one
step per schema change since MLflow 1): 3-5 s of CPU on a quiet 2-core machine, longer than
a small plan takes to fit, paid by every new folder a user runs in (and by every test that
makes a store). The schema it ends with is the same for every store of one MLflow version,
so ltr-bench builds it once, into ``mlflow-schema-<version>.db`` in its cache folder
(``$LTR_BENCH_CACHE``, else ``$XDG_CACHE_HOME/ltr_bench``, else ``~/.cache/ltr_bench``; or
``$LTR_BENCH_MLFLOW_SCHEMA_DIR``),
and a new store is a copy of that file. MLflow then finds every table at the newest
revision (it checks: :func:`mlflow.store.db.utils._verify_schema`), and creates its
``Default`` experiment itself with the new store's own artifact location, as it does in a
store it made (the template holds tables only: it is built by MLflow's own table creation,
``_initialize_tables``, never by opening a store).

Guarantees: the template is written to a temporary file and renamed into place, so a
template that exists is complete; it is accepted only when it is an SQLite file whose
tables include MLflow's (``alembic_version``, ``experiments``, ``runs``) and whose name
carries the running MLflow's version; the copy reaches the store's path by a rename (the
store is either absent or a whole copy). Anything that goes wrong (no MLflow internals of
that name, an unwritable cache) only means MLflow creates the store itself, as before: the
copy is an optimisation and never a requirement. A store that then fails to open is rebuilt
by :func:`~ltr_bench.tracking.store.prepare_sqlite_store` without the template, which is
discarded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from ltr_bench.registry_status import status_cache_path

__all__ = ["discard_template", "seed_new_store", "template_path"]

#: where the template is kept when not in the cache folder (a test suite whose tests each
#: have a cache folder of their own shares one template through it)
SCHEMA_DIR_VARIABLE = "LTR_BENCH_MLFLOW_SCHEMA_DIR"

#: tables whose presence makes an SQLite file an MLflow tracking schema
_REQUIRED = frozenset({"alembic_version", "experiments", "runs"})


def template_path() -> Path | None:
    """``<folder>/mlflow-schema-<MLflow version>.db``, the folder being
    ``$LTR_BENCH_MLFLOW_SCHEMA_DIR`` if set, else ltr-bench's cache folder; None when
    MLflow's version cannot be read (the installed distribution's metadata, without
    importing MLflow)."""
    from importlib import metadata

    try:
        version = metadata.version("mlflow-skinny")
    except metadata.PackageNotFoundError:
        try:
            version = metadata.version("mlflow")
        except metadata.PackageNotFoundError:
            return None
    safe = "".join(c if c.isalnum() or c in "._+-" else "_" for c in version)
    folder = os.environ.get(SCHEMA_DIR_VARIABLE)
    root = Path(folder).expanduser() if folder else status_cache_path().parent
    return root / f"mlflow-schema-{safe}.db"


def _is_schema(path: Path) -> bool:
    """Whether ``path`` is a readable SQLite file holding MLflow's tables (read-only)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                return False
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            names = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
            revision = con.execute("select count(*) from alembic_version").fetchone()[0]
        finally:
            con.close()
    except (OSError, sqlite3.Error):
        return False
    return _REQUIRED <= names and revision == 1


def _build(target: Path) -> bool:
    """Build MLflow's empty schema into ``target`` (temporary file, then a rename)."""
    try:
        import sqlalchemy
        from mlflow.store.db import utils as db_utils

        initialize = db_utils._initialize_tables  # MLflow's private helper: checked, not assumed
    except (ImportError, AttributeError):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    os.unlink(tmp)  # SQLite makes the file itself
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp}")
    try:
        initialize(engine)
    finally:
        engine.dispose()
    if not _is_schema(Path(tmp)):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False
    os.replace(tmp, target)
    return True


def seed_new_store(db: Path) -> bool:
    """Make the new store ``db`` (which must not exist yet) a copy of the empty MLflow schema,
    building the template first if needed. Returns whether ``db`` was made; False (nothing
    written at ``db``) whenever the template cannot be had, and MLflow creates the store."""
    template = template_path()
    if template is None:
        return False
    tmp: str | None = None
    try:
        if not _is_schema(template) and not _build(template):
            return False
        fd, tmp = tempfile.mkstemp(prefix=f".{db.name}.", suffix=".tmp", dir=db.parent)
        os.close(fd)
        shutil.copyfile(template, tmp)
        if not _is_schema(Path(tmp)):  # the template changed under us: let MLflow build
            return False
        os.replace(tmp, db)
        tmp = None
        return True
    except Exception:  # noqa: BLE001 - an optimisation: any failure means MLflow builds it
        return False
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def discard_template() -> None:
    """Remove the template (a store copied from it failed to open)."""
    template = template_path()
    if template is not None:
        with contextlib.suppress(OSError):
            template.unlink()
