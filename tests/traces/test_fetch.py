"""``gensolver traces fetch``: downloads checked by size and SHA-256, nothing half written.

Nothing leaves the machine: a real ``http.server`` on 127.0.0.1 serves either a small file
written by the test (a table built here, its digest computed with :mod:`hashlib`) or the
``../shared/traces`` folder (the real files against the real checksums of
:data:`~gensolver.traces.fetch.TRACE_SOURCES`, through ``--mirror``). Every request is counted.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
from pathlib import Path
from typing import Iterator

import pytest

from gensolver.cli import main
from gensolver.errors import GensolverError
from gensolver.traces.fetch import TRACE_SOURCES, FetchError, TraceFile, TraceSource, fetch_trace


class _Server:
    """A threaded HTTP server on 127.0.0.1 serving ``root``; counts the requests it answers."""

    def __init__(self, root: Path) -> None:
        self.requests: list[str] = []
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                outer.requests.append(self.path)
                super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     functools.partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[_Server, bytes]]:
    root = tmp_path / "www"
    (root / "toy").mkdir(parents=True)
    data = b"timestamp,duration,num_gpus,gpu_time,cluster\n" + b"".join(
        f"2017-10-0{1 + k % 9} 0{k % 10}:00:00,{60 * (k + 1)}.0,1,{60 * (k + 1)}.0,vc{k % 3}\n".encode()
        for k in range(50))
    (root / "toy" / "toy.csv").write_bytes(data)
    with _Server(root) as srv:
        yield srv, data


def _table(url: str, data: bytes, *, sha: str | None = "right", size: int | None = None) -> dict[str, TraceSource]:
    digest = hashlib.sha256(data).hexdigest() if sha == "right" else sha
    return {"toy": TraceSource("toy", "toy", (TraceFile("toy.csv", url, len(data) if size is None else size, digest),),
                               "a test", "none")}


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_fetch_downloads_checks_and_skips_present_files(served, tmp_path: Path) -> None:
    srv, data = served
    dest = tmp_path / "traces"
    table = _table(f"{srv.url}/toy/toy.csv", data)
    assert fetch_trace("toy", dest, sources=table) == {"toy.csv": "downloaded"}
    assert (dest / "toy" / "toy.csv").read_bytes() == data
    assert fetch_trace("toy", dest, sources=table) == {"toy.csv": "present"}
    assert len(srv.requests) == 1  # the second call found the file correct and asked nothing
    assert fetch_trace("toy", dest, sources=table, force=True) == {"toy.csv": "downloaded"}
    assert len(srv.requests) == 2


@pytest.mark.parametrize(("kind", "message"), [
    ("checksum", "checksum mismatch"),
    ("larger", "larger than the expected"),
    ("smaller", "expected"),
    ("missing", "HTTP 404"),
])
def test_a_bad_download_raises_and_leaves_nothing(served, tmp_path: Path, kind: str, message: str) -> None:
    srv, data = served
    dest = tmp_path / "traces"
    url = f"{srv.url}/toy/{'nope.csv' if kind == 'missing' else 'toy.csv'}"
    table = {"checksum": _table(url, data, sha="0" * 64), "larger": _table(url, data, size=len(data) - 10),
             "smaller": _table(url, data, size=len(data) + 10), "missing": _table(url, data)}[kind]
    with pytest.raises(FetchError, match=message):
        fetch_trace("toy", dest, sources=table)
    assert _leftovers(dest / "toy") == []  # no partial file, no temporary file


def test_a_wrong_file_already_present_is_replaced(served, tmp_path: Path) -> None:
    srv, data = served
    dest = tmp_path / "traces"
    (dest / "toy").mkdir(parents=True)
    (dest / "toy" / "toy.csv").write_bytes(b"stale")
    assert fetch_trace("toy", dest, sources=_table(f"{srv.url}/toy/toy.csv", data)) == {"toy.csv": "downloaded"}
    assert (dest / "toy" / "toy.csv").read_bytes() == data


def test_an_entry_without_checksum_warns_unverified(served, tmp_path: Path) -> None:
    srv, data = served
    with pytest.warns(UserWarning, match="unverified"):
        st = fetch_trace("toy", tmp_path / "t", sources=_table(f"{srv.url}/toy/toy.csv", data, sha=None))
    assert st == {"toy.csv": "downloaded (unverified)"}


def test_unknown_trace_names_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="alibaba, philly") as info:
        fetch_trace("nope", tmp_path)
    assert isinstance(info.value, GensolverError)  # the base error promise: a KeyError and a GensolverError
    assert str(info.value) == "unknown trace 'nope'; valid: alibaba, philly"
    assert not (tmp_path / "nope").exists()


def test_the_table_pins_commits_and_gives_every_checksum() -> None:
    for src in TRACE_SOURCES.values():
        for f in src.files:
            assert f.url.startswith("https://raw.githubusercontent.com/")
            assert len(f.url.split("/")[5]) == 40  # a commit, not a branch that can move
            assert f.sha256 is not None and len(f.sha256) == 64 and f.size > 0


def test_cli_fetches_the_real_alibaba_files_from_a_local_mirror(shared_dir: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The real checksums of the table match the real files (served from ../shared/traces)."""
    dest = tmp_path / "dl"
    with _Server(shared_dir / "traces") as srv:
        rc = main(["traces", "fetch", "alibaba", "--dir", str(dest), "--mirror", srv.url, "--timeout", "10"])
        out = capsys.readouterr().out
        assert rc == 0, out
        assert len(srv.requests) == 2
    for f in TRACE_SOURCES["alibaba"].files:
        got = dest / "alibaba-gpu-2023" / f.name
        assert got.read_bytes() == (shared_dir / "traces" / "alibaba-gpu-2023" / f.name).read_bytes()
    assert "--traces-dir" in out
    # and the simulator replays what was fetched
    rc = main(["simulate", "alibaba", "--traces-dir", str(dest), "--max-jobs", "8", "--nodes", "1",
               "--policy", "fcfs-packing", "--json"])
    assert rc == 0


def test_fetch_then_simulate_with_gensolver_traces_set(shared_dir: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --dir, fetch writes where simulate reads: $GENSOLVER_TRACES when it is set (it
    used to write to the per-user folder, and simulate then failed)."""
    home = tmp_path / "env-traces"
    monkeypatch.setenv("GENSOLVER_TRACES", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with _Server(shared_dir / "traces") as srv:
        assert main(["traces", "fetch", "alibaba", "--mirror", srv.url, "--timeout", "10"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "`gensolver simulate alibaba`" in out  # no --traces-dir needed
    assert sorted(p.name for p in (home / "alibaba-gpu-2023").iterdir()) == sorted(
        f.name for f in TRACE_SOURCES["alibaba"].files)
    assert not (tmp_path / "xdg").exists()
    assert main(["simulate", "alibaba", "--max-jobs", "8", "--nodes", "1", "--policy", "fcfs-packing", "--json"]) == 0


def test_cli_checksum_failure_exits_1_without_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    www = tmp_path / "www" / "philly"
    www.mkdir(parents=True)
    (www / "philly.csv").write_bytes(b"not the philly trace\n")
    dest = tmp_path / "dl"
    with _Server(tmp_path / "www") as srv:
        rc = main(["traces", "fetch", "philly", "--dir", str(dest), "--mirror", srv.url, "--timeout", "10"])
    err = capsys.readouterr().err
    assert rc == 1 and "expected 3444496" in " ".join(err.split())
    assert _leftovers(dest / "philly") == []


@pytest.mark.parametrize(("args", "message"), [
    (["traces", "fetch", "nope", "--dir", "x"], "nope"),
    (["traces", "fetch", "alibaba", "--dir", "x", "--mirror", "ftp://h"], "--mirror"),
    (["traces", "fetch", "alibaba", "--dir", "x", "--timeout", "0"], "--timeout"),
])
def test_cli_bad_options_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_simulate_names_the_fetch_command_when_a_trace_is_missing(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "philly", "--traces-dir", str(tmp_path), "--policy", "fcfs-packing"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "gensolver traces fetch philly" in err and "--traces-dir DIR" in err
