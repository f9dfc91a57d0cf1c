"""Every read of a user path is bounded, format sniffing included (issue 32): ``simulate`` on
``/dev/zero`` or a FIFO fed without end stops at a documented limit and exits 2."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gensolver.cli import main
from gensolver.model.inputs import ReadError, iter_lines_limited, read_head

ZERO = Path("/dev/zero")
needs_zero = pytest.mark.skipif(not ZERO.exists(), reason="no /dev/zero")


def _exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(argv)
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, " ".join(err.split())


@needs_zero
@pytest.mark.parametrize("fmt", [None, "alibaba", "philly", "gentask"])
def test_simulate_on_dev_zero_exits_2_within_the_limit(capsys, monkeypatch, fmt: str | None) -> None:
    monkeypatch.setenv("GENSOLVER_MAX_FILE_BYTES", str(1 << 20))
    argv = ["simulate", str(ZERO), "--policy", "fcfs-packing"] + ([] if fmt is None else ["--format", fmt])
    if fmt == "alibaba":
        argv += ["--node-list", str(ZERO)]
    rc, err = _exit(argv, capsys)
    assert rc == 2 and ("over the limit" in err or "longer than" in err or "CSV" in err), err


class _Feeder(threading.Thread):
    """Writes ``head`` then an endless run of bytes into a FIFO until the reader closes it."""

    def __init__(self, path: Path, head: bytes) -> None:
        super().__init__(daemon=True)
        self.path, self.head, self.written = path, head, 0

    def run(self) -> None:
        try:
            with open(self.path, "wb") as fh:
                fh.write(self.head)
                chunk = b"1" * 65536
                while self.written < 64 << 20:  # a backstop: the reader must stop far earlier
                    fh.write(chunk)
                    self.written += len(chunk)
        except (BrokenPipeError, OSError):
            return


def _release(fifo: Path, feeder: _Feeder) -> None:
    """Let a feeder still blocked in open() go: open the read end once and close it."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    os.close(fd)
    feeder.join(timeout=60)
    assert not feeder.is_alive()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_simulate_on_an_endless_gentask_fifo_stops_at_the_limit(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("GENSOLVER_MAX_FILE_BYTES", str(1 << 20))
    fifo = tmp_path / "tasks.yaml"
    os.mkfifo(fifo)
    feeder = _Feeder(fifo, b"apiVersion: x\n")
    feeder.start()
    rc, err = _exit(["simulate", str(fifo), "--policy", "fcfs-packing"], capsys)
    _release(fifo, feeder)
    assert rc == 2 and "over the limit" in err, err
    assert feeder.written < 8 << 20  # the reader stopped near its 1 MiB limit, not at the backstop


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
@pytest.mark.parametrize("fmt", [None, "philly", "alibaba"])
def test_a_csv_trace_fifo_is_refused_before_any_read(tmp_path: Path, capsys, fmt: str | None) -> None:
    """A CSV trace is read twice (header, then rows): a FIFO could not be, so it is refused by
    name instead of blocking in the second open."""
    fifo = tmp_path / "trace.csv"
    os.mkfifo(fifo)
    feeder = _Feeder(fifo, b"timestamp,duration,num_gpus,gpu_time,cluster\n")
    feeder.start()
    rc, err = _exit(["simulate", str(fifo), "--policy", "fcfs-packing"] + ([] if fmt is None else ["--format", fmt]),
                    capsys)
    _release(fifo, feeder)
    assert rc == 2 and "not a regular file" in err, err


def test_iter_lines_limited_refuses_a_long_line_and_a_long_file(tmp_path: Path) -> None:
    f = tmp_path / "x.csv"
    f.write_bytes(b"a,b\n" + b"x" * 100 + b"\n")
    with open(f, "rb") as fh:
        assert list(iter_lines_limited(fh)) == ["a,b\n", "x" * 100 + "\n"]
    with open(f, "rb") as fh, pytest.raises(ReadError, match="longer than 50"):
        list(iter_lines_limited(fh, max_line=50))
    with open(f, "rb") as fh, pytest.raises(ReadError, match="over the limit of 10"):
        list(iter_lines_limited(fh, limit=10))


def test_iter_lines_limited_drops_a_bom_only_at_the_start(tmp_path: Path) -> None:
    f = tmp_path / "x.csv"
    f.write_bytes(b"\xef\xbb\xbfa\n\xef\xbb\xbfb\n")
    with open(f, "rb") as fh:
        assert list(iter_lines_limited(fh)) == ["a\n", "\ufeffb\n"]


@needs_zero
def test_read_head_reads_a_bounded_prefix() -> None:
    assert read_head(ZERO, 1000) == b"\0" * 1000
