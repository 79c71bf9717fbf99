"""The ``ltr-bench`` command line: click commands only (parse, call, print).

Owns the commands (:mod:`.app`: the group, ``run``, ``rankers``, ``datasets``, ``download``,
``ui``; :mod:`.report`, :mod:`.tune`, :mod:`.cache`), the shared options (:mod:`.options`)
and the terminal console (:mod:`.console`). May import every wing; holds no logic of its own:
exit 0 ok, 1 a failed run, 2 a bad invocation, 130 interrupted.

``main`` (the console script) is imported on first use, so that the command modules can import
their siblings (``from ltr_bench.cli import options``) without importing the whole group.
"""

__all__ = ["main"]


def __getattr__(name: str):
    if name == "main":
        from ltr_bench.cli.app import main

        return main
    raise AttributeError(f"module 'ltr_bench.cli' has no attribute {name!r}")
