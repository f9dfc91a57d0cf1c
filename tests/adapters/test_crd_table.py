"""The GenTask CRD against the reader, field by field (gensolver.adapters.crd_table): the page
docs/reference/gentask-crd.md is the table computed now; every difference has a reason and no
reason is stale; and the comparison fails when either side changes (a field the reader starts
to read, a CRD bound that moves, a stale reason, an edited page)."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from gensolver.adapters import crd, crd_table
from gensolver.adapters.crd_table import FULL, agreement, crd_fields, field_name, reader_fields, unexplained
from gensolver.market.spec import SpecError, parse_gentask

ROOT = Path(__file__).resolve().parents[2]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gentask_crd_table", ROOT / "scripts" / "gentask_crd_table.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


#: the reader's limits the table depends on, at their defaults
LIMITS = ("GENSOLVER_MAX_TASK_SECONDS",)


@pytest.fixture(scope="module")
def rows() -> list[crd_table.FieldRow]:
    with pytest.MonkeyPatch.context() as mp:
        for name in LIMITS:
            mp.delenv(name, raising=False)
        return agreement()


def test_the_page_is_the_table_computed_now(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LIMITS:
        monkeypatch.delenv(name, raising=False)
    ref = _script()
    current = (ROOT / "docs" / "reference" / "gentask-crd.md").read_text(encoding="utf-8")
    expected = ref.page(current)
    if current != expected:
        import difflib

        diff = "\n".join(list(difflib.unified_diff(current.splitlines(), expected.splitlines(), "page", "now",
                                                   lineterm=""))[:40])
        raise AssertionError(f"docs/reference/gentask-crd.md is out of date; run python "
                             f"scripts/gentask_crd_table.py\n{diff}")
    drifted = current.replace("| yes |", "| no |", 1)  # the comparison can fail
    assert drifted != current and ref.page(drifted) != drifted


def test_every_difference_has_a_reason_and_no_reason_is_stale(rows: list[crd_table.FieldRow]) -> None:
    assert unexplained(rows) == []


def test_every_field_of_one_side_is_on_the_other(rows: list[crd_table.FieldRow]) -> None:
    """Every field the reader looks up is in the CRD; every CRD field is read, except the two
    container fields the cluster needs and the reader ignores."""
    read = {field_name(p) for p in reader_fields()}
    schema = {field_name(p) for p in crd_fields()}
    assert read - schema == {"metadata.labels.tenant"}  # a key of the labels map (metadata.labels.*)
    assert "metadata.labels.*" in schema
    assert schema - read == {"metadata.labels.*", "spec.containers[].name", "spec.containers[].image"}
    # fields that only a fallback or one branch reads are found too
    assert {"metadata.namespace", "spec.containers[].args", "spec.containers[].resources.limits.cpu"} <= read
    assert len(rows) == len(read | schema) - 1  # the labels' '*' is probed as its 'tenant' key


def _reader_accepts(doc: dict[str, Any]) -> bool:
    try:
        parse_gentask(doc)
    except SpecError:
        return False
    return True


@pytest.mark.parametrize("path, value", [
    (("spec", "genResources", "gpuCompute"), " 0.5 "), (("spec", "genResources", "gpuCompute"), "0.1m"),
    (("spec", "genResources", "gpuCompute"), "+0.5"), (("spec", "genResources", "gpuMemory", "preferred"), "30 Gi"),
    (("spec", "containers", 0, "resources", "requests", "cpu"), "1e3m"),
    (("spec", "containers", 0, "resources", "requests", "memory"), "1" * 65)])
def test_the_spellings_the_audit_found_now_agree(path: tuple[Any, ...], value: str) -> None:
    """Values that the reader and the CRD once judged differently, checked directly on both."""
    doc = copy.deepcopy(FULL)
    cur: Any = doc
    for part in path[:-1]:
        cur = cur[part]
    cur[path[-1]] = value
    assert _reader_accepts(doc) == (crd.validate_document(doc) == [])


def test_a_field_the_reader_starts_to_read_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = crd_table.parse_gentask

    def reads_more(doc: Any, **kw: Any) -> Any:
        task = real(doc, **kw)  # a valid document has the mappings looked up below
        if doc["spec"]["genResources"].get("priority") not in (None, 1):
            raise SpecError("spec.genResources.priority", "bad")
        return task

    monkeypatch.setattr(crd_table, "parse_gentask", reads_more)
    monkeypatch.setattr(crd_table, "PROBES", (1, "x"))
    assert "spec.genResources.priority" in {field_name(p) for p in reader_fields()}
    problems = unexplained(agreement())
    assert any(p.startswith("spec.genResources.priority: on one side only") for p in problems), problems


def test_a_crd_bound_that_moves_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = crd.gentask_schema

    def wider() -> dict[str, Any]:
        schema = real()
        gm = schema["properties"]["spec"]["properties"]["genResources"]["properties"]["gpuMemory"]
        gm["properties"]["urgencyFactor"]["maximum"] = 2
        return schema

    monkeypatch.setattr(crd, "gentask_schema", wider)
    monkeypatch.setattr(crd_table, "PROBES", (0.5, 2))
    problems = [p for p in unexplained(agreement()) if not p.endswith("is stale")]  # few probes: stale reasons
    assert problems == ["spec.genResources.gpuMemory.urgencyFactor: accepted by the crd only: 2; not in REASONS"]


def test_a_stale_reason_is_caught(rows: list[crd_table.FieldRow], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(crd_table.REASONS, ("spec.genResources.value", "crd"), "no longer true")
    monkeypatch.setitem(crd_table.ONE_SIDED, "spec.genResources.value", "no longer true")
    assert unexplained(rows) == ["ONE_SIDED['spec.genResources.value'] is stale",
                                 "REASONS[('spec.genResources.value', 'crd')] is stale"]


def test_a_null_is_read_alike_on_both_sides(rows: list[crd_table.FieldRow]) -> None:
    """The API server prunes a null from a non-nullable field (every field of the CRD) and the
    reader reads a null as the field left out: the ``None`` probe never divides the two sides."""
    assert None in crd_table.PROBES
    assert [r.field for r in rows if "None" in r.reader_only + r.crd_only] == []
    assert all(not node.get("nullable") for node in map(crd_table._crd_node, crd_fields()) if node is not None)
