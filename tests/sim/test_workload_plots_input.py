"""Bad synthetic-workload parameters name themselves; pictures are written atomically and
without matplotlib warnings."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from gensolver.sim import WorkloadError, parse_synthetic, simulate, synthetic_workload


@pytest.mark.parametrize("kwargs, key", [
    ({"tenants": 0}, "tenants"),
    ({"per_node": 0}, "per_node"),
    ({"n": 0}, "n"),
    ({"n": 2.5}, "n"),
    ({"gpus": (float("nan"),)}, "gpus"),
    ({"gpus": (80.0, -80.0)}, "gpus"),
    ({"gpus": ()}, "gpus"),
    ({"gang_share": 5.0}, "gang_share"),
    ({"gang_share": float("nan")}, "gang_share"),
    ({"preemptible_share": -1.0}, "preemptible_share"),
    ({"seed": -1}, "seed"),
    ({"rate": float("inf")}, "rate"),
    ({"rate": 1e-300}, "rate"),
    ({"duration_min": 0}, "duration_min"),
    ({"memory_choices": (0.0,)}, "memory_choices"),
])
def test_synthetic_workload_names_the_bad_parameter(kwargs: dict, key: str) -> None:
    with pytest.raises(WorkloadError, match=rf"^{key}[ =]"):
        synthetic_workload(**{"n": 4, **kwargs})


def test_parse_synthetic_rejects_duplicates_and_stray_text() -> None:
    with pytest.raises(WorkloadError, match="'n' given twice"):
        parse_synthetic("synthetic:n=4,n=5")
    with pytest.raises(WorkloadError, match="synthetic spec: tenants must be a positive integer"):
        parse_synthetic("synthetic:n=4,tenants=0")
    with pytest.raises(WorkloadError, match="expected synthetic:key=value"):
        parse_synthetic("synthetic_jobs.yaml")
    assert parse_synthetic("synthetic:n=4", seed=5).tasks == parse_synthetic("synthetic:n=4,seed=5").tasks


def test_jct_cdf_without_finished_jobs_warns_nothing(tmp_path: Path) -> None:
    from gensolver.sim.plots import plot_jct_cdf

    w = synthetic_workload(2, gpus=(16.0,), memory_choices=(8.0,))
    r = simulate(w, policy="elastic", until=1)  # stopped before any job finished
    assert not r.jct()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plot_jct_cdf([r], tmp_path / "jct.png")
    assert [str(c.message) for c in caught] == []
    assert (tmp_path / "jct.png").read_bytes()[:4] == b"\x89PNG"


def test_write_plots_is_atomic_and_renders_first(tmp_path: Path) -> None:
    from gensolver.sim.plots import render_plots, write_plots

    r = simulate(synthetic_workload(4), policy="elastic")
    figures = render_plots([r])
    assert set(figures) == {"gantt-elastic.png", "utilisation.png", "jct_cdf.png", "credits.png"}
    assert not list(tmp_path.iterdir())  # rendering writes nothing
    out = tmp_path / "pics"
    (out / "credits.png").mkdir(parents=True)  # the last picture cannot be written
    with pytest.raises(OSError):
        write_plots([r], out)
    # earlier pictures are whole files, and no temporary file is left behind
    assert sorted(p.name for p in out.iterdir()) == ["credits.png", "gantt-elastic.png", "jct_cdf.png",
                                                     "utilisation.png"]
    assert (out / "gantt-elastic.png").read_bytes() == figures["gantt-elastic.png"]
