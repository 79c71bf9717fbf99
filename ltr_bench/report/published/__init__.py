"""Published results as data: the table shipped with ltr-bench and the rows a report shows.

:mod:`.table` reads and checks the table (``published_results.csv`` in this folder, package
data; :func:`load_published`); :mod:`.compare` picks the rows a report shows under its
recorded conventions and puts our value beside each (:func:`published_section`, with the
model mapping :data:`MODEL_MAP`); :mod:`.render` writes them as Markdown, CSV and HTML.
How the rows may be compared: ``README.md`` here and ``docs/results/published.md``.
"""

from ltr_bench.report.published.compare import (
    MODEL_MAP,
    ModelMap,
    PublishedLine,
    PublishedSection,
    published_section,
)
from ltr_bench.report.published.table import (
    COLUMNS,
    CONVENTIONS,
    PublishedRow,
    PublishedTableError,
    load_published,
    table_path,
)

__all__ = [
    "COLUMNS",
    "CONVENTIONS",
    "MODEL_MAP",
    "ModelMap",
    "PublishedLine",
    "PublishedRow",
    "PublishedSection",
    "PublishedTableError",
    "load_published",
    "published_section",
    "table_path",
]
