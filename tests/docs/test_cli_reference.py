"""docs/reference/cli.md is the program's own ``--help``: regenerated here and compared."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_cli_reference_is_the_help_of_every_command() -> None:
    ref = _script()
    current = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    expected = ref.page(current)
    if current != expected:
        import difflib

        diff = "\n".join(list(difflib.unified_diff(current.splitlines(), expected.splitlines(), "cli.md", "--help",
                                                   lineterm=""))[:40])
        raise AssertionError(f"docs/reference/cli.md has drifted from --help; run python scripts/cli_reference.py\n{diff}")


def test_every_command_has_a_section() -> None:
    ref = _script()
    text = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    paths = ref.command_paths()
    assert len(paths) >= 17
    for path in paths:
        assert f"### `{' '.join(['gensolver', *path])}`" in text


def test_the_comparison_catches_a_drift() -> None:
    ref = _script()
    current = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    drifted = current.replace("Seconds of the solve", "Seconds of the solv", 1)
    assert drifted != current and ref.page(drifted) != drifted
    assert ref.page(drifted) == ref.page(current)
