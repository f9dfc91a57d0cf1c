"""Pictures of simulation results (matplotlib, Agg backend, PNG files)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from .api import SimResult
from .metrics import utilisation_series

__all__ = ["plot_gantt", "plot_utilisation", "plot_jct_cdf", "plot_credits", "write_plots"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_gantt(result: SimResult, path: str | Path, *, max_gpus: int = 32) -> Path:
    """GPU memory Gantt chart: one row per device, a bar per task (height = its memory share)."""
    plt = _plt()
    gpus = [g.id for g in result.gpus][:max_gpus]
    cap = {g.id: g.memory for g in result.gpus}
    row = {g: i for i, g in enumerate(gpus)}
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(gpus) + 1.5))
    running: dict[str, tuple[float, tuple[str, ...], float]] = {}
    cmap = plt.get_cmap("tab20")
    colour = {}

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
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def plot_utilisation(results: Sequence[SimResult], path: str | Path) -> Path:
    """Memory and compute utilisation over time, one line per policy."""
    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for r in results:
        t, m, c = utilisation_series(r.events)
        axes[0].step(t, m, where="post", label=r.policy)
        axes[1].step(t, c, where="post", label=r.policy)
    axes[0].set_ylabel("memory used / up")
    axes[1].set_ylabel("compute used / up")
    axes[1].set_xlabel("time (steps)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def plot_jct_cdf(results: Sequence[SimResult], path: str | Path) -> Path:
    """Empirical CDF of job completion times per policy."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in results:
        x = np.sort(np.array(list(r.jct().values()), dtype=float))
        if x.size:
            ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=r.policy)
    ax.set_xscale("log")
    ax.set_xlabel("JCT (steps)")
    ax.set_ylabel("fraction of jobs")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def plot_credits(results: Sequence[SimResult], path: str | Path) -> Path:
    """Credit balance per tenant over time (auction runs)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
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
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def write_plots(results: Sequence[SimResult], out: str | Path) -> list[Path]:
    """All pictures into ``out``: ``gantt-<policy>.png``, ``utilisation.png``, ``jct_cdf.png``, ``credits.png``."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    paths = [plot_gantt(r, d / f"gantt-{r.policy}.png") for r in results]
    paths.append(plot_utilisation(results, d / "utilisation.png"))
    paths.append(plot_jct_cdf(results, d / "jct_cdf.png"))
    paths.append(plot_credits(results, d / "credits.png"))
    return paths
