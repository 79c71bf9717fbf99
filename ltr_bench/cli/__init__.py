"""The ``ltr-bench`` command line: click commands only (parse, call, print).

Owns the commands (:mod:`.app`: the group, ``run``, ``rankers``, ``datasets``, ``download``,
``ui``; :mod:`.report`, :mod:`.tune`, :mod:`.cache`), the shared options (:mod:`.options`)
and the terminal console (:mod:`.console`). May import every wing; holds no logic of its own:
exit 0 ok, 1 a failed run, 2 a bad invocation, 130 interrupted.
"""

from ltr_bench.cli.app import main

__all__ = ["main"]
