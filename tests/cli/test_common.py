"""Shared CLI helpers: the output-path checks every command runs before its work."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from gensolver.cli.common import check_output_dir, check_output_file, fail_reading


def _code(fn, *args) -> int | None:
    try:
        fn(*args)
    except typer.Exit as exc:
        return exc.exit_code
    return None


def test_output_file_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "a.json"
    a_file.write_text("{}")
    assert _code(check_output_file, tmp_path, "--out") == 2  # a directory
    assert "is a directory" in capsys.readouterr().err
    assert _code(check_output_file, a_file / "x.json", "--out") == 2  # under a file
    assert "not a directory" in capsys.readouterr().err
    assert _code(check_output_file, tmp_path / "new" / "deeper" / "x.json", "--out") is None
    assert _code(check_output_file, a_file, "--out") is None  # overwriting a file is fine
    assert _code(check_output_file, None, "--out") is None
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_output_dir_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "a.json"
    a_file.write_text("{}")
    assert _code(check_output_dir, a_file, "--out") == 2
    assert "is not a directory" in capsys.readouterr().err
    assert _code(check_output_dir, a_file / "sub", "--out") == 2
    assert _code(check_output_dir, tmp_path / "fresh" / "sub", "--out") is None
    assert _code(check_output_dir, tmp_path, "--out") is None


def test_a_name_too_long_is_bad_input_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long = tmp_path / ("x" * 300) / "out.json"
    assert _code(check_output_file, long, "--out") == 2
    assert _code(check_output_dir, tmp_path / ("y" * 300), "--out") == 2
    assert "--out" in capsys.readouterr().err


def test_fail_prints_brackets_in_the_message_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    from gensolver.cli.common import fail

    assert _code(fail, "bad value [bold]x[/bold] in /tasks/[0]") == 2
    assert "bad value [bold]x[/bold] in /tasks/[0]" in capsys.readouterr().err


def test_a_file_that_cannot_be_read_or_parsed_exits_2_naming_it(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "gone.yaml"
    try:
        missing.read_text()
    except OSError as exc:
        assert _code(fail_reading, missing, exc) == 2
    assert f"{missing}: No such file or directory" in capsys.readouterr().err
    assert _code(fail_reading, missing, ValueError("bad quantity '30Gx'")) == 2
    assert f"{missing}: bad quantity '30Gx'" in capsys.readouterr().err
    # a message that already names the file or an option is not prefixed again
    for msg in (f"{missing}: line 3: not a mapping", "--gpus: must be positive"):
        assert _code(fail_reading, missing, ValueError(msg)) == 2
        assert f"error: {msg}" in " ".join(capsys.readouterr().err.split())
