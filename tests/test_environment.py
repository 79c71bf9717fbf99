"""The environment a record names (:mod:`ltr_bench.environment`): computed once per process,
and ``environment_soon`` computes it on a thread so the run does not wait for it later."""

from __future__ import annotations

import threading

from ltr_bench import environment as env


def test_environment_soon_fills_the_cache_on_another_thread(monkeypatch):
    env.environment.cache_clear()
    threads: list[str] = []
    real = env._git_commit

    def git_commit(path):
        threads.append(threading.current_thread().name)
        return real(path)

    monkeypatch.setattr(env, "_git_commit", git_commit)
    wait = env.environment_soon()
    wait()
    assert threads and set(threads) == {"ltr-bench-environment"}  # not on the caller's
    assert env.environment.cache_info().currsize == 1
    first = env.environment()  # from the cache: no git call on this thread
    assert set(threads) == {"ltr-bench-environment"}
    assert first["cpu_count"] >= 1 and "python" in first["versions"]
    env.environment.cache_clear()
