"""The benchmark plots: quality against time, and solve time against size (matplotlib)."""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import require_extra
from .cell import CellResult

__all__ = ["plot_quality", "plot_time"]

_MARKERS = "osD^v<>ph*"


def _figure() -> tuple[Any, Any]:
    """A new Figure (no pyplot, no backend switch) and its one axes."""
    require_extra("matplotlib", "sim", "the benchmark plots (or pass plots=False)")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    return fig, fig.add_subplot(1, 1, 1)


def plot_quality(cells: Sequence[CellResult], methods: Sequence[str], suite: str) -> Any:
    """Welfare (% of best known) against solve time per cell, one marker per method: a Figure."""
    fig, ax = _figure()
    for k, m in enumerate(methods):
        pts = [(max(c.seconds, 1e-4), c.pct_best) for c in cells if c.method == m and c.pct_best is not None]
        if pts:
            ax.scatter(*zip(*pts), label=m, marker=_MARKERS[k % len(_MARKERS)], alpha=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("solve time per cell (s, log)")
    ax.set_ylabel("welfare, % of best known")
    ax.set_title(f"{suite}: quality vs time")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    return fig


def plot_time(cells: Sequence[CellResult], methods: Sequence[str], suite: str) -> Any:
    """Solve time against instance size (bids), one marker per method: a Figure."""
    fig, ax = _figure()
    for k, m in enumerate(methods):
        pts = sorted((max(c.bids, 1), max(c.seconds, 1e-4)) for c in cells if c.method == m and c.status != "error")
        if pts:
            ax.plot(*zip(*pts), label=m, marker=_MARKERS[k % len(_MARKERS)], linestyle="", alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bids (log)")
    ax.set_ylabel("solve time (s, log)")
    ax.set_title(f"{suite}: solve time vs size")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    return fig


def _plots(cells: Sequence[CellResult], methods: Sequence[str], suite: str) -> dict[str, tuple[str, bytes]]:
    """The two PNG plots in memory: ``{key: (file name, bytes)}``."""
    return {"plot_quality": ("quality_vs_time.png", _png(plot_quality(cells, methods, suite))),
            "plot_time": ("time_vs_size.png", _png(plot_time(cells, methods, suite)))}


def _png(fig: Any) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()
