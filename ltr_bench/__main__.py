"""``python -m ltr_bench``: the same command as the ``ltr-bench`` script."""

from ltr_bench.cli.app import console_main

if __name__ == "__main__":
    console_main()
