"""Pictures of simulation results as :class:`matplotlib.figure.Figure` objects.

Every ``plot_*`` function returns its Figure (shown inline in a notebook) and, given a path or
a binary file, also saves it there. Figures are built with the object-oriented API, outside
:mod:`matplotlib.pyplot`: no backend is selected or switched, and nothing accumulates in
pyplot's figure registry. Files are written through :func:`gensolver.model.io.atomic_write`
(a temporary file renamed into place), so a failed write never leaves a half picture behind.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from ..errors import require_extra
from ..model.io import atomic_write
from .api import SimResult
from .metrics import useful_work, utilisation_series

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_gantt", "plot_utilisation", "plot_jct_cdf", "plot_credits", "figures", "render_plots", "write_plots",
           "save_figure"]

Target = str | Path | IO[bytes]


def _figure(figsize: tuple[float, float]) -> Figure:
    """A Figure outside pyplot (no backend involved until it is saved or shown)."""
    require_extra("matplotlib", "sim", "the simulator's plots")
    from matplotlib.figure import Figure

    return Figure(figsize=figsize)


def _cmap(name: str):  # type: ignore[no-untyped-def]
    matplotlib = require_extra("matplotlib", "sim", "the simulator's plots")
    return matplotlib.colormaps[name]


def save_figure(fig: Figure, target: Target) -> None:
    """Save ``fig``: a path (format from its suffix, default PNG; written atomically) or a binary file (PNG)."""
    if isinstance(target, (str, Path)):
        path = Path(target)
        with atomic_write(path, "wb") as fh:
            fig.savefig(fh, format=path.suffix.lstrip(".").lower() or "png", dpi=90)
    else:
        fig.savefig(target, format="png", dpi=90)


def _done(fig: Figure, path: Optional[Target]) -> Figure:
    if path is not None:
        save_figure(fig, path)
    return fig


def plot_gantt(result: SimResult, path: Optional[Target] = None, *, max_gpus: int = 32) -> Figure:
    """GPU memory Gantt chart: one row per device, a bar per task (height = its memory share).

    Returns the Figure; also saves it to ``path`` when given.
    """
    gpus = [g.id for g in result.gpus][:max_gpus]
    cap = {g.id: g.memory for g in result.gpus}
    row = {g: i for i, g in enumerate(gpus)}
    fig = _figure((10, 0.35 * len(gpus) + 1.5))
    ax = fig.add_subplot(1, 1, 1)
    running: dict[str, tuple[float, tuple[str, ...], float]] = {}
    cmap = _cmap("tab20")
    colour: dict[str, Any] = {}

    def close(tid: str, t: float) -> None:
        t0, gs, mem = running.pop(tid)
        for g in gs:
            if g in row:
                c = colour.setdefault(tid, cmap(len(colour) % 20))
                ax.broken_barh([(t0, max(t - t0, 1e-9))], (row[g] - 0.4, 0.8 * min(1.0, mem / cap[g])),
                               facecolors=c, edgecolor="k", linewidth=0.2)

    for e in result.events:
        if e.kind == "start":
            running[e.task] = (e.time, e.gpus, e.memory)
        elif e.kind == "resize" and e.task in running:
            close(e.task, e.time)
            running[e.task] = (e.time, e.gpus, e.memory)
        elif e.kind in ("stop", "finish") and e.task in running:
            close(e.task, e.time)
        elif e.kind == "gpu_down" and e.gpus[0] in row:
            ax.axvline(e.time, color="red", linewidth=0.8)
    for tid in list(running):
        close(tid, result.end_time)
    ax.set_yticks(range(len(gpus)))
    ax.set_yticklabels(gpus, fontsize=6)
    ax.set_xlabel("time (steps)")
    ax.set_title(f"GPU memory over time — {result.policy} ({result.workload})")
    fig.tight_layout()
    return _done(fig, path)


def plot_utilisation(results: Sequence[SimResult], path: Optional[Target] = None) -> Figure:
    """Memory (used by tasks' speed laws: solid; held: dotted) and compute utilisation over time,
    one colour per policy (the Figure; saved to ``path`` if given)."""
    fig = _figure((9, 6))
    axes = fig.subplots(2, 1, sharex=True)
    for r in results:
        t, m, c = utilisation_series(r.events)
        _, used, _ = utilisation_series(r.events, *useful_work(r.tasks.values()))
        (line,) = axes[0].step(t, used, where="post", label=r.policy)
        axes[0].step(t, m, where="post", linestyle=":", color=line.get_color())
        axes[1].step(t, c, where="post", label=r.policy)
    axes[0].set_ylabel("memory used (held dotted) / up")
    axes[1].set_ylabel("compute used / up")
    axes[1].set_xlabel("time (steps)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return _done(fig, path)


def plot_jct_cdf(results: Sequence[SimResult], path: Optional[Target] = None) -> Figure:
    """Empirical CDF of job completion times per policy, over every accepted job: a policy that
    left jobs unfinished tops out below 1 (the legend says done/total). The Figure; saved to
    ``path`` if given."""
    fig = _figure((7, 4.5))
    ax = fig.add_subplot(1, 1, 1)
    for r in results:
        x = np.sort(np.array(list(r.jct().values()), dtype=float))
        if x.size:
            total = max(len(r.tasks), x.size)
            ax.step(x, np.arange(1, x.size + 1) / total, where="post", label=f"{r.policy} ({x.size}/{total})")
    ax.set_xlabel("JCT (steps)")
    ax.set_ylabel("fraction of jobs")
    if ax.lines:
        ax.set_xscale("log")
        ax.legend(fontsize=7)
    else:  # no job finished: an empty chart that says so (legend() would warn: nothing to label)
        ax.text(0.5, 0.5, "no finished jobs", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    return _done(fig, path)


def plot_credits(results: Sequence[SimResult], path: Optional[Target] = None) -> Figure:
    """Credit balance per tenant over time, market runs (the Figure; saved to ``path`` if given)."""
    fig = _figure((8, 4.5))
    ax = fig.add_subplot(1, 1, 1)
    for r in results:
        bal: dict[str, float] = {}
        series: dict[str, tuple[list[float], list[float]]] = {}
        for e in r.events:
            if e.kind == "credit":
                bal[e.tenant] = bal.get(e.tenant, 0.0) + e.amount
                ts, vs = series.setdefault(e.tenant, ([], []))
                ts.append(e.time)
                vs.append(bal[e.tenant])
        for tenant, (ts, vs) in sorted(series.items())[:12]:
            ax.step(ts, vs, where="post", label=f"{r.policy}: {tenant}")
    ax.set_xlabel("time (steps)")
    ax.set_ylabel("credits")
    if ax.lines:
        ax.legend(fontsize=6)
    fig.tight_layout()
    return _done(fig, path)


def figures(results: Sequence[SimResult]) -> dict[str, Figure]:
    """Every picture of ``results`` as a Figure, by file name (see :func:`write_plots`)."""
    out: dict[str, Figure] = {f"gantt-{r.policy}.png": plot_gantt(r) for r in results}
    out["utilisation.png"] = plot_utilisation(results)
    out["jct_cdf.png"] = plot_jct_cdf(results)
    out["credits.png"] = plot_credits(results)
    return out


def render_plots(results: Sequence[SimResult]) -> dict[str, bytes]:
    """All pictures as PNG bytes, by file name (see :func:`write_plots`); nothing is written."""
    rendered: dict[str, bytes] = {}
    for name, fig in figures(results).items():
        buf = io.BytesIO()
        save_figure(fig, buf)
        rendered[name] = buf.getvalue()
    return rendered


def write_plots(results: Sequence[SimResult], out: str | Path) -> list[Path]:
    """All pictures into ``out``: ``gantt-<policy>.png``, ``utilisation.png``, ``jct_cdf.png``, ``credits.png``.

    Every picture is drawn before the first file is written; each file is written atomically.
    """
    d = Path(out)
    figures = render_plots(results)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in figures.items():
        with atomic_write(d / name, "wb") as fh:
            fh.write(data)
        paths.append(d / name)
    return paths
