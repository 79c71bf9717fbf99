"""Fixtures shared by the framework's tests."""

from __future__ import annotations

import pytest

import ltrb_fake_rankers as fakes


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
