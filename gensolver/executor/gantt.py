"""Gantt charts of execution plans: a :class:`matplotlib.figure.Figure` built outside pyplot
(no backend is selected; saving to PNG needs no display)."""

from __future__ import annotations

import os
from typing import Any

from ..errors import require_extra
from .plan import ExecutionPlan

__all__ = ["plot_plan"]


def plot_plan(plan: ExecutionPlan, path: str | os.PathLike[str] | None = None, *, title: str | None = None,
              dpi: int = 120) -> Any:
    """Draw one row per device, one bar per entry, preemption points as markers.

    Each device row is split into lanes, one per task on it; a bar's label gives the task and
    its memory grant (GiB) and compute share. Red ``x`` marks a task stopping at a preemption
    point, a green triangle where it resumes.

    Parameters
    ----------
    plan : ExecutionPlan
    path : path, optional
        Write a PNG there (the figure is still returned).
    title : str, keyword-only, optional
    dpi : int, keyword-only

    Returns
    -------
    matplotlib.figure.Figure
    """
    matplotlib = require_extra("matplotlib", "sim", "plot_plan (Gantt charts)")
    from matplotlib.figure import Figure

    devices = [d for d in plan.devices]
    fig = Figure(figsize=(10, 1.0 + 0.9 * max(1, len(devices))))
    ax = fig.add_subplot(1, 1, 1)
    tasks = [t.id for t in plan.tasks]
    cmap = matplotlib.colormaps.get_cmap("tab20")
    colour = {t: cmap(k % 20) for k, t in enumerate(tasks)}
    yticks, ylabels = [], []
    lane_of: dict[tuple[str, str], tuple[float, float]] = {}
    for row, dev in enumerate(devices):
        names = sorted({e.task for e in dev.entries})
        h = 0.8 / max(1, len(names))
        for k, name in enumerate(names):
            lane_of[(dev.id, name)] = (row - 0.4 + k * h, h)
        for e in dev.entries:
            y, hh = lane_of[(dev.id, e.task)]
            ax.broken_barh([(e.start, e.end - e.start)], (y, hh * 0.95), facecolors=colour.get(e.task, "grey"),
                           edgecolor="black", linewidth=0.5)
            ax.text(e.start + (e.end - e.start) / 2, y + hh / 2,
                    f"{e.task} {e.memory / (1 << 30):.3g}G {e.compute:.2g}", ha="center", va="center", fontsize=7,
                    clip_on=True)
        yticks.append(row)
        mem = "" if dev.memory is None else f"\n{dev.memory / (1 << 30):.3g} GiB"
        ylabels.append(f"{dev.id}{mem}")
    for p in plan.preemptions:
        for dev_id in p.from_devices:
            if (dev_id, p.task) in lane_of:
                y, hh = lane_of[(dev_id, p.task)]
                ax.plot([p.time], [y + hh / 2], marker="x", color="red", markersize=8)
        for dev_id in p.to_devices:
            if (dev_id, p.task) in lane_of:
                y, hh = lane_of[(dev_id, p.task)]
                ax.plot([p.resume], [y + hh / 2], marker=">", color="green", markersize=6)
    ax.set_yticks(yticks)
    ax.set_yticklabels(ylabels, fontsize=8)
    ax.set_ylim(-0.6, max(0, len(devices) - 1) + 0.6)
    ax.invert_yaxis()
    ax.set_xlim(0, max(plan.horizon, max((e.end for e in plan.entries), default=1.0)))
    ax.set_xlabel("seconds from the round's start")
    ax.set_title(title if title is not None else (plan.name or "execution plan"))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(os.fspath(path), dpi=dpi)
    return fig
