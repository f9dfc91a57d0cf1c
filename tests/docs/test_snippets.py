"""Every ```python block of README.md and docs/**/*.md runs against the current code.

One test per file: its blocks run in order in one namespace, in a fresh temporary working
directory, so a later block may use names an earlier one defined. Mark a block that cannot run
here (GPU or cluster only) with ```python skip, or put ``<!-- no-exec -->`` on the line
before it. A page that starts with ``<!-- requires: traces -->`` is skipped when the public
traces (``gensolver.instances.default_trace_dir()``) are not present.

Registries that snippets extend (solver methods, mechanisms, simulator policies) are restored
after each file, so documentation examples cannot leak into other tests.
"""

from __future__ import annotations

import contextlib
import traceback

import pytest

from ._snippets import ROOT, doc_files, python_snippets

FILES = [f for f in doc_files() if any(not s.skip for s in python_snippets(f))]


def test_snippets_are_found():
    assert any(f.name == "README.md" for f in FILES), "README.md should have a runnable example"
    assert len(FILES) >= 5


@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(ROOT)) for f in FILES])
def test_snippets_run(path, tmp_path, monkeypatch):
    if path.read_text(encoding="utf-8").lstrip().startswith("<!-- requires: traces -->"):
        from gensolver.instances import default_trace_dir

        if not (default_trace_dir() / "alibaba-gpu-2023").is_dir():
            pytest.skip("the public traces are not present beside the project")
    with _restored_registries():
        _run_file(path, tmp_path, monkeypatch)


@contextlib.contextmanager
def _restored_registries():
    from gensolver.mechanisms import MECHANISMS
    from gensolver.sim.policies import POLICIES
    from gensolver.solvers import registry

    saved = [(r, r.snapshot()) for r in (registry.METHODS, MECHANISMS, POLICIES)]
    try:
        yield
    finally:
        for r, snapshot in saved:
            r.restore(snapshot)


def _run_file(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__doc_snippets__"}
    rel = path.relative_to(ROOT)
    ran = 0
    for snip in python_snippets(path):
        if snip.skip:
            continue
        try:
            code = compile(snip.code, f"{rel}:{snip.line}", "exec")
            exec(code, namespace)  # noqa: S102 - running the documentation is the point
        except Exception:
            pytest.fail(f"snippet at {rel}:{snip.line} failed:\n{traceback.format_exc()}\n--- snippet ---\n{snip.code}")
        ran += 1
    assert ran, f"{rel}: every snippet is skipped"
