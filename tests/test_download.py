"""download: fetch, resume, check and unpack LETOR archives, against a loopback HTTP server
serving generated archives of the official layouts."""

from __future__ import annotations

import hashlib
import http.server
import io
import threading
import zipfile

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.data import download, load_fold

LINE = "{label} qid:{q} 1:{a:.3f} 2:{b:.3f} 3:0.5\n"


def _letor_text(seed: int, n_queries: int = 6) -> str:
    out = []
    for q in range(1, n_queries + 1):
        for d in range(5):
            out.append(LINE.format(label=(q + d + seed) % 3, q=q, a=d / 5, b=(q * d) % 7 / 7))
    return "".join(out)


def _mslr_zip() -> bytes:
    """An archive with MSLR-WEB30K's layout (Fold1..5/{train,vali,test}.txt), tiny."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k in range(1, 6):
            for i, split in enumerate(("train", "vali", "test")):
                zf.writestr(f"Fold{k}/{split}.txt", _letor_text(k * 3 + i))
    return buf.getvalue()


class _Server:
    """Serves ``files`` (name -> bytes) on 127.0.0.1 with HTTP range support; ``cut`` makes
    the next full response stop after that many bytes (a dropped connection)."""

    def __init__(self, files: dict[str, bytes]):
        self.files, self.cut, self.ranges = files, None, []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                body = outer.files.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404)
                    return
                start = 0
                rng = self.headers.get("Range")
                if rng:
                    start = int(rng.split("=")[1].split("-")[0])
                    outer.ranges.append(start)
                    self.send_response(206)
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                payload = body[start:]
                if outer.cut is not None and not rng:
                    payload, outer.cut = payload[: outer.cut], None
                self.wfile.write(payload)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch):
    body = _mslr_zip()
    srv = _Server({"MSLR-WEB30K.zip": body})
    archive = download.ARCHIVES["mslr30k"]
    monkeypatch.setitem(
        download.ARCHIVES,
        "mslr30k",
        download.Archive(
            f"{srv.url}/MSLR-WEB30K.zip",
            archive.filename,
            "zip",
            sha256=hashlib.sha256(body).hexdigest(),
            size=len(body),
        ),
    )
    yield srv
    srv.close()


def test_download_unpacks_into_the_layout_the_loader_reads(server, tmp_path):
    result = CliRunner().invoke(main, ["download", "mslr30k", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "MSLR-WEB30K" / "Fold5" / "test.txt").is_file()
    fold = load_fold("mslr30k", 2, data_dir=tmp_path, cache_dir=tmp_path / "cache")
    assert fold.train.n_queries == 6 and fold.vali is not None
    again = CliRunner().invoke(main, ["download", "mslr30k", "--data-dir", str(tmp_path)])
    assert again.exit_code == 0 and "already in place" in again.stderr


def test_an_interrupted_download_resumes_with_a_range_request(server, tmp_path):
    server.cut = 1000
    first = CliRunner().invoke(main, ["download", "mslr30k", "--data-dir", str(tmp_path)])
    assert first.exit_code == 1 and "Traceback" not in first.output
    part = tmp_path / ".downloads" / "MSLR-WEB30K.zip.part"
    assert part.stat().st_size == 1000
    second = CliRunner().invoke(main, ["download", "mslr30k", "--data-dir", str(tmp_path)])
    assert second.exit_code == 0, second.output
    assert server.ranges == [1000]
    assert (tmp_path / "MSLR-WEB30K" / "Fold1" / "train.txt").is_file()


def test_a_wrong_checksum_deletes_the_file_and_says_so(server, tmp_path, monkeypatch):
    a = download.ARCHIVES["mslr30k"]
    monkeypatch.setitem(
        download.ARCHIVES,
        "mslr30k",
        download.Archive(a.url, a.filename, "zip", sha256="0" * 64, size=a.size),
    )
    result = CliRunner().invoke(main, ["download", "mslr30k", "--data-dir", str(tmp_path)])
    assert result.exit_code == 1 and "differs from the expected" in result.stderr
    assert not (tmp_path / ".downloads" / "MSLR-WEB30K.zip").exists()
    assert not (tmp_path / "MSLR-WEB30K").exists()


def test_an_archive_without_the_expected_layout_is_refused(tmp_path, monkeypatch):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("README.txt", "not a dataset")
    srv = _Server({"x.zip": buf.getvalue()})
    try:
        monkeypatch.setitem(
            download.ARCHIVES,
            "mslr10k",
            download.Archive(f"{srv.url}/x.zip", "MSLR-WEB10K.zip", "zip"),
        )
        result = CliRunner().invoke(main, ["download", "mslr10k", "--data-dir", str(tmp_path)])
    finally:
        srv.close()
    assert result.exit_code == 1 and "does not contain Fold1/train.txt" in result.stderr


def test_a_missing_file_on_the_server_names_the_url_and_the_fix(tmp_path):
    srv = _Server({})
    try:
        result = CliRunner().invoke(
            main,
            ["download", "mslr10k", "--data-dir", str(tmp_path), "--url", f"{srv.url}/gone.zip"],
        )
    finally:
        srv.close()
    assert result.exit_code == 1 and "HTTP 404" in result.stderr and "--url" in result.stderr


@pytest.mark.parametrize(
    "name, code, message",
    [
        ("yahoo-set1", 2, "requires accepting its data licence"),
        ("istella-s", 2, "licence must be accepted"),
        ("synthetic", 2, "generated on the fly"),
        ("lightgbm-example", 2, "ships with ltr-bench"),
        ("mslr31k", 2, "unknown dataset"),
    ],
)
def test_datasets_that_cannot_be_downloaded_say_why(name, code, message, tmp_path):
    result = CliRunner().invoke(main, ["download", name, "--data-dir", str(tmp_path)])
    assert result.exit_code == code, result.output
    assert message in result.stderr and "Traceback" not in result.output


def test_rar_archives_need_a_tool_and_say_which(tmp_path, monkeypatch):
    monkeypatch.setattr(download, "_rar_tool", lambda: None)
    result = CliRunner().invoke(main, ["download", "mq2008", "--data-dir", str(tmp_path)])
    assert result.exit_code == 1 and "install one of unrar, 7z or bsdtar" in result.stderr
    assert not (tmp_path / ".downloads").exists()  # nothing fetched before the check
