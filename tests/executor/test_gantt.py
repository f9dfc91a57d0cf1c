"""The plan's Gantt chart (:mod:`gensolver.executor.gantt`): read back from the figure's own
artists, one bar per entry at its device's row, one label per entry, one stop and one resume
marker per preemption point, and a PNG on disk when asked."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from gensolver.executor import plan_from_dict, plot_plan  # noqa: E402

GIB = 2**30
DOC = {"schema": "gensolver.plan/v1", "time_unit": "s", "horizon": 10, "name": "two devices",
       "tasks": [{"id": "a"}, {"id": "b"}],
       "devices": [{"id": "d0", "memory": 8 * GIB, "entries": [
                       {"task": "a", "start": 0, "end": 3, "memory": 4 * GIB, "compute": 0.5},
                       {"task": "b", "start": 1, "end": 4, "memory": 2 * GIB, "compute": 0.5},
                       {"task": "a", "start": 6, "end": 8, "memory": 4 * GIB, "compute": 0.5}]},
                   {"id": "d1", "memory": 16 * GIB, "entries": [
                       {"task": "b", "start": 5, "end": 9, "memory": 2 * GIB, "compute": 1.0}]}],
       "preemptions": [{"task": "a", "time": 3, "resume": 6, "from": ["d0"], "to": ["d0"], "kind": "gap",
                        "mode": "checkpoint"}]}


def test_every_entry_is_a_bar_on_its_device_row(tmp_path) -> None:
    plan = plan_from_dict(DOC)
    fig = plot_plan(plan, tmp_path / "g.png", title="mine")
    ax = fig.axes[0]
    boxes = [path.get_extents() for c in ax.collections for path in c.get_paths()]  # one path per bar
    bars = sorted((round(b.x0, 6), round(b.width, 6), round((b.y0 + b.y1) / 2)) for b in boxes)
    want = sorted((float(e["start"]), float(e["end"] - e["start"]), row)
                  for row, d in enumerate(DOC["devices"]) for e in d["entries"])
    assert bars == want
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == sorted(["a 4G 0.5", "b 2G 0.5", "a 4G 0.5", "b 2G 1"])
    markers = [(line.get_marker(), tuple(line.get_xdata())) for line in ax.lines]
    assert sorted(markers) == [(">", (6.0,)), ("x", (3.0,))]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["d0\n8 GiB", "d1\n16 GiB"]
    assert ax.get_title() == "mine"
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_title_defaults_to_the_plans_name() -> None:
    assert plot_plan(plan_from_dict(DOC)).axes[0].get_title() == "two devices"
