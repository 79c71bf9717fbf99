"""``python -m ltr_bench``: the same command as the ``ltr-bench`` script."""

from ltr_bench.cli.app import main

if __name__ == "__main__":
    main()
