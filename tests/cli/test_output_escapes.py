"""Control characters from input files are escaped in what the CLI prints (issue 20, item 7).

Rich writes no escape sequence of its own when output is not a terminal (as under pytest), so
any ESC byte in the output would come from the data.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gensolver.cli import main
from gensolver.cli.common import printable

ESC_ID = "a\x1b[31mred\x1b]0;owned\x07"
DOC = {"schema": "gensolver.instance/v1", "name": "n\x1b[2J",
       "slots": [{"id": "s", "capacity": {"memory": 80}}],
       "bids": [{"id": ESC_ID, "bidder": "B\x9b1m\u202e", "value": 5, "demand": {"s": {"memory": 30}}}]}
CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")


def test_printable_escapes_controls_and_keeps_text() -> None:
    assert printable("a\x1b[31mb\tc\nd\u202e") == "a\\x1b[31mb\tc\nd\\u202e"
    assert printable("plain [text] é") == "plain [text] é"


@pytest.mark.parametrize("argv", [["solve", "{f}", "--method", "greedy"], ["solve", "{f}", "--mechanism", "vcg"],
                                  ["verify", "{f}", "--mechanism", "vcg"]])
def test_ids_with_escapes_are_printed_escaped_in_tables(tmp_path: Path, capsys, argv) -> None:
    f = tmp_path / "esc.json"
    f.write_text(json.dumps(DOC))
    rc = main([a.format(f=f) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert not any(c in out + err for c in CONTROLS), repr(out)
    assert "n\\x1b[2J" in out  # the name is shown, escaped
    shown = "".join(out.split()).replace("│", "").replace("┃", "")
    assert ("B\\x9b1m" if argv[0] == "verify" else "\\x1b[31mred") in shown
    # --json keeps the id exact (JSON escapes it itself)
    if argv[0] == "solve":
        rc = main([a.format(f=f) for a in argv] + ["--json"])
        out, _ = capsys.readouterr()
        assert json.loads(out)["winners"] == [ESC_ID] and "\x1b" not in out


def test_error_messages_escape_controls(tmp_path: Path, capsys) -> None:
    rc = main(["solve", str(tmp_path / "x\x1b[2Jy.json")])
    _, err = capsys.readouterr()
    assert rc == 2 and "x\\x1b[2Jy.json" in err and "\x1b" not in err
