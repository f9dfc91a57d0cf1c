"""``gensolver traces`` (:mod:`gensolver.cli.traces_cmd`): the listing names every file of every
source in :data:`gensolver.traces.fetch.TRACE_SOURCES` with its size, and ``fetch`` refuses bad
options with exit 2 naming them before any download or folder."""

from __future__ import annotations

import pytest

from gensolver.cli import main
from gensolver.traces.fetch import TRACE_SOURCES


def test_the_listing_shows_every_file_and_its_size(capsys) -> None:
    # captured output is not a terminal: the listing is printed wide, one whole row per file
    assert main(["traces", "list"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "│" in line]
    for src in TRACE_SOURCES.values():
        for f in src.files:
            (row,) = [r for r in rows if f" {f.name} " in r and f" {src.name} " in r]
            assert f" {f.size} " in row and src.folder in row
            assert ("unverified" if f.sha256 is None else f.sha256[:16]) in row


@pytest.mark.parametrize(("args", "option"), [(["--timeout", "0"], "--timeout"), (["--timeout", "nan"], "--timeout"),
                                               (["--mirror", "ftp://x"], "--mirror")])
def test_fetch_refuses_bad_options_before_anything(tmp_path, capsys, args: list[str], option: str) -> None:
    name = next(iter(TRACE_SOURCES))
    target = tmp_path / "traces"
    assert main(["traces", "fetch", name, "--dir", str(target), *args]) == 2
    assert option in capsys.readouterr().err and not target.exists()


def test_fetch_refuses_an_unknown_trace(capsys) -> None:
    assert main(["traces", "fetch", "no-such-trace"]) == 2
    err = capsys.readouterr().err
    assert "no-such-trace" in err and all(name in err for name in TRACE_SOURCES)
