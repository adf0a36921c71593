"""Reading in a child process: a slow, crashing or memory-hungry file costs only itself."""

from __future__ import annotations

import os
import signal
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.isolation import IsolatedReader
from micro_rag_mcp.ingest.readers import read_document
from micro_rag_mcp.local.engine import Engine
from tests.docfactory import make_docx, make_pdf
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings


def test_isolated_read_gives_the_same_document_as_reading_in_process(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "p.pdf", ["First page words.", "Second page words."])
    with IsolatedReader(tmp_path, timeout_s=60) as reader:
        assert reader.read(pdf, max_bytes=10**7) == read_document(pdf, max_bytes=10**7)


def test_the_document_title_crosses_the_process_boundary(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "t.pdf", ["Some words."], title="Field Notes")
    docx = make_docx(tmp_path / "t.docx", ["Some words."], title="Board Minutes")
    with IsolatedReader(tmp_path, timeout_s=60) as reader:
        assert reader.read(pdf, max_bytes=10**7).title == "Field Notes"
        assert reader.read(docx, max_bytes=10**7).title == "Board Minutes"


def test_a_read_over_the_time_limit_is_killed_and_the_next_file_is_read(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "slow.pdf", [f"Page {i} text." for i in range(50)])
    text = tmp_path / "ok.txt"
    text.write_text("fine")
    with IsolatedReader(tmp_path, timeout_s=0.001) as reader:  # less than the reader's own start-up
        with pytest.raises(ReadError, match="longer than 0.001 s"):
            reader.read(pdf, max_bytes=10**7)
        reader.timeout_s = 60
        assert reader.read(text, max_bytes=10**7).text == "fine"


def test_a_reader_that_dies_costs_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = tmp_path / "ok.txt"
    text.write_text("fine")
    with IsolatedReader(tmp_path, timeout_s=60) as reader:
        reader.read(text, max_bytes=10**7)
        proc, conn = reader._proc, reader._conn
        assert proc is not None and conn is not None
        os.kill(proc.pid, signal.SIGSTOP)  # from here on it runs none of its own code

        def send_then_die(request: object) -> None:
            Connection.send(conn, request)
            os.kill(proc.pid, signal.SIGKILL)  # dies holding the request, unanswered

        monkeypatch.setattr(conn, "send", send_then_die)
        with pytest.raises(ReadError, match="died"):
            reader.read(text, max_bytes=10**7)
        assert reader.read(text, max_bytes=10**7).text == "fine"


def test_a_reader_that_died_between_files_is_replaced(tmp_path: Path) -> None:
    text = tmp_path / "ok.txt"
    text.write_text("fine")
    with IsolatedReader(tmp_path, timeout_s=60) as reader:
        reader.read(text, max_bytes=10**7)
        assert reader._proc is not None
        reader._proc.kill()
        reader._proc.wait()  # known dead before the next file is sent
        assert reader.read(text, max_bytes=10**7).text == "fine"


def test_a_file_needing_more_memory_than_the_ceiling_fails_alone(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(("é" * 60_000_000).encode("latin-1"))  # not UTF-8: decoded by detection
    small = tmp_path / "small.txt"
    small.write_text("fine")
    with IsolatedReader(tmp_path, timeout_s=120, memory_bytes=200 * 1024**2) as reader:
        with pytest.raises(ReadError, match="(?i)memory"):
            reader.read(big, max_bytes=10**9)
        assert reader.read(small, max_bytes=10**9).text == "fine"


def test_reindex_records_a_timed_out_file_with_its_reason(data: Path) -> None:
    make_pdf(data / "slow.pdf", ["Some text."])
    eng = Engine(make_settings(data, read_timeout_s=0.001), FakeEmbedder)
    eng.load_model()
    report = eng.reindex()
    assert report.files_failed == [
        ("slow.pdf", "reading took longer than 0.001 s; skipped (the file may be pathological)")
    ]


def test_a_file_swapped_for_a_symlink_after_the_scan_is_not_read(tmp_path: Path) -> None:
    data, outside = tmp_path / "docs", tmp_path / "outside"
    (data / "notes").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret")
    (data / "notes" / "a.txt").write_text("inside")
    with IsolatedReader(data, timeout_s=60) as reader:
        assert reader.read(data / "notes" / "a.txt", max_bytes=10**6).text == "inside"
        (data / "notes" / "a.txt").unlink()
        os.symlink(outside / "secret.txt", data / "notes" / "a.txt")  # swapped after the scan
        with pytest.raises(ReadError, match="outside the data folder"):
            reader.read(data / "notes" / "a.txt", max_bytes=10**6)
        (data / "notes" / "a.txt").unlink()
        (data / "notes").rmdir()
        os.symlink(outside, data / "notes")  # or a folder above it
        (outside / "a.txt").write_text("outside again")
        with pytest.raises(ReadError, match="outside the data folder"):
            reader.read(data / "notes" / "a.txt", max_bytes=10**6)


def test_a_timed_out_file_is_tried_again_at_the_next_reindex(data: Path) -> None:
    make_pdf(data / "slow.pdf", ["Some text about comets."])
    os.utime(data / "slow.pdf", (1e9, 1e9))
    eng = Engine(make_settings(data, read_timeout_s=0.001), FakeEmbedder)
    eng.load_model()
    assert [p for p, _ in eng.reindex().files_failed] == ["slow.pdf"]
    patient = Engine(make_settings(data), FakeEmbedder)
    patient.load_model()
    report = patient.reindex()  # same stamp, yet read again: the failure was not the file's
    assert report.files_failed == [] and report.files_updated == 1


def test_the_readers_warnings_name_the_file_and_come_through_our_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    mail = tmp_path / "inbox" / "no-boundary.eml"
    mail.parent.mkdir()
    mail.write_bytes(
        b"From: ada@example.org\r\nSubject: Boiler check\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed\r\n\r\nThe pressure valve on pipe nine leaks.\r\n"
    )
    with (
        caplog.at_level("WARNING", logger="micro_rag_mcp.reader"),
        IsolatedReader(tmp_path, timeout_s=60) as reader,
    ):
        assert "pressure valve" in reader.read(mail, max_bytes=10**7).text
    said = [r.getMessage() for r in caplog.records if r.name == "micro_rag_mcp.reader"]
    assert said == ["inbox/no-boundary.eml: a multipart body without its boundary, read as text"]
    assert "/proc/self/fd" not in capfd.readouterr().err  # the reader wrote nothing itself
