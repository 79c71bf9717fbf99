"""Fixtures shared by the framework's tests."""

from __future__ import annotations

import os
import subprocess

import ltrb_fake_rankers as fakes
import pytest
from ltrb_processes import close_dask_rankers_clusters

# tests read MLflow right after a run: the run waits for its logging to end (the default;
# ltr_bench/tracking/background.py). Said here too, so that a developer's own
# LTR_BENCH_MLFLOW_WAIT=0 does not leave them reading a store still being logged; the tests
# of the background logging and of the default set their own value
os.environ.setdefault("LTR_BENCH_MLFLOW_WAIT", "inf")


@pytest.fixture(scope="module", autouse=True)
def _close_dask_rankers_clusters():
    """After each test file, close the local Dask clusters the ``lightgbm-dask`` and
    ``xgboost-dask`` rankers keep for the process's later fits (closed at exit in a user's
    process): in a test worker that lives for the whole suite their idle processes would
    take a third of a core until the end. A later file's fit starts its own."""
    yield
    close_dask_rankers_clusters()


@pytest.fixture
def fake_rankers(tmp_path, monkeypatch):
    """Fake rankers registered through a fake distribution's entry points (see
    ``ltrb_fake_rankers``), with their call logs reset before and after the test."""
    root = tmp_path / "plugins"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    fakes.install(root)
    fakes.reset()
    yield fakes
    fakes.reset()


@pytest.fixture
def chromium():
    """Path of Debian's Chromium for a Playwright test. Skips where Playwright or Chromium
    is missing, except with ``LTR_BENCH_REQUIRE_BROWSER=1`` (CI sets it), where a missing
    browser fails the test instead of hiding it."""
    import shutil

    required = os.environ.get("LTR_BENCH_REQUIRE_BROWSER") == "1"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if required:
            raise
        pytest.skip("playwright is not installed")
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if required:
            pytest.fail("LTR_BENCH_REQUIRE_BROWSER=1 but no chromium on PATH")
        pytest.skip("no chromium on PATH (Debian package: chromium)")
    return path


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 1 MiB tmpfs, filled to the last block (skips when mounting is not allowed)."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    if (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
