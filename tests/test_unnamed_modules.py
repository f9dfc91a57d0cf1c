"""The rule "a test names every module": ``scripts/unnamed_modules.py`` finds no module of
``gensolver`` that no test names (by dotted name, path, or a mirrored ``test_<module>*.py``)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from tests.scriptload import load_script


def _script() -> ModuleType:
    return load_script("scripts/unnamed_modules.py")


def test_every_module_is_named_by_a_test() -> None:
    assert _script().unnamed() == [], "modules no test names: give each a behaviour test (tests/<package>/test_<module>.py)"


def test_the_check_finds_an_unnamed_module(tmp_path: Path) -> None:
    script = _script()
    pkg = tmp_path / "gensolver" / "sim"
    pkg.mkdir(parents=True)
    for name in ("__init__.py", "faults.py", "faultsx.py", "jumps.py"):
        (pkg / name).write_text("")
    (tmp_path / "gensolver" / "__init__.py").write_text("")
    (tmp_path / "tests" / "sim").mkdir(parents=True)
    (tmp_path / "tests" / "sim" / "test_jumps_more.py").write_text("import gensolver.sim.faults\n")
    (tmp_path / "tests" / "test_pkg.py").write_text("import gensolver\n")
    # faults by its dotted name, jumps by a mirrored test module, the packages by name; faultsx is
    # not named (gensolver.sim.faults is not a prefix match for it)
    assert script.unnamed(tmp_path) == ["gensolver.sim.faultsx"]
