"""Issue 33, item 5: an output never replaces an input of the same run
(:func:`ltr_bench.results.check_not_an_input`), whatever path leads to it."""

from __future__ import annotations

import pytest

from ltr_bench.errors import UsageError
from ltr_bench.results import check_not_an_input


def test_an_output_onto_an_input_file_or_into_an_input_folder_is_refused_by_any_path(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "test.txt").write_text("0 qid:1 1:0.5\n")
    config = tmp_path / "mlp.json"
    config.write_text("{}")
    inputs = [(data, "the data of data"), (config, "the file of neural.config")]
    (tmp_path / "link.json").symlink_to(config)
    for path, fragment in [
        (data / "test.txt", "would be written into the data of data"),
        (data / "new.json", "would be written into the data of data"),
        (tmp_path / "data" / ".." / "data" / "test.txt", "would be written into"),
        (config, "would replace the file of neural.config"),
        (tmp_path / "link.json", "would replace the file of neural.config"),
    ]:
        with pytest.raises(UsageError, match=fragment):
            check_not_an_input(path, "--output", inputs)
    check_not_an_input(tmp_path / "out.json", "--output", inputs)  # beside them: fine
    check_not_an_input(tmp_path / "data-out.json", "--output", inputs)  # a name, not a folder
