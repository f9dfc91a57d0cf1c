"""``gensolver round``: GenTask YAML to a market round (``gensolver.gpuround/v1`` JSON).

The first step of the command-line pipeline::

    gensolver round jobs.yaml --gpus 80,40 -o round.json     # GenTask YAML -> round
    gensolver solve round.json --mechanism vcg              # clear and price it
    gensolver plan round.json -o plan.json                  # per-GPU timelines
    gensolver run plan.json --backend sim --time-scale 0.01 # or: gensolver emit slurm plan.json ...

``gensolver plan`` also reads GenTask YAML itself, through :func:`gentask_round`, with the same
options.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from ..errors import InputError
from .common import check_output_file, console, fail, fail_reading

__all__ = ["register", "gentask_round", "is_gentask_file", "DEFAULT_GPUS", "DEFAULT_STEPS", "DEFAULT_STEP_SECONDS"]

#: defaults of a round built from GenTask YAML: the demo's cluster and horizon
DEFAULT_GPUS = "80,40"
DEFAULT_STEPS = 8
DEFAULT_STEP_SECONDS = 900.0


def is_gentask_file(path: Path) -> bool:
    """Whether ``path`` is named like YAML (``.yaml``/``.yml``): read as GenTask documents."""
    return path.suffix.lower() in (".yaml", ".yml")


def gentask_round(path: Path, *, gpus: str = DEFAULT_GPUS, steps: int = DEFAULT_STEPS,
                  step_seconds: float = DEFAULT_STEP_SECONDS, memory_levels: int = 3) -> Any:
    """The :class:`~gensolver.model.GpuRound` of the GenTasks in ``path`` on ``gpus``.

    Raises
    ------
    ValueError
        Bad ``gpus``/``steps``/``step_seconds`` (the message names the option), or a GenTask
        file that cannot be read (:class:`~gensolver.market.spec.SpecError`, with its line).
    """
    from ..market.spec import loads_gentasks
    from ..model import GpuRound, GpuSpec
    from ..model.inputs import read_limited

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InputError(f"--steps: must be a positive integer, got {steps!r}")
    if not (step_seconds > 0 and step_seconds < float("inf")):
        raise InputError(f"--step-seconds: must be a positive number of seconds, got {step_seconds!r}")
    mems: list[float] = []
    for part in gpus.split(","):
        try:
            mem = float(part)
        except ValueError:
            raise InputError(f"--gpus: expected GiB per GPU like '80,40', got {gpus!r}") from None
        if not (mem > 0 and mem < float("inf")):
            raise InputError(f"--gpus: expected positive GiB per GPU like '80,40', got {gpus!r}")
        mems.append(mem)
    text = read_limited(path).decode("utf-8")
    tasks = loads_gentasks(text, source=str(path), step_seconds=step_seconds)
    if not tasks:
        raise InputError(f"{path}: no GenTask document")
    specs = tuple(GpuSpec(f"gpu{k}", mem) for k, mem in enumerate(mems))
    return GpuRound(specs, tasks, steps=steps, step_seconds=step_seconds, memory_levels=memory_levels,
                    name=path.stem)


def round_command(
    file: Path = typer.Argument(..., help="GenTask YAML (one or more documents)."),
    output: Path = typer.Option(..., "--output", "-o", help="Where to write the gensolver.gpuround/v1 JSON."),
    gpus: str = typer.Option(DEFAULT_GPUS, "--gpus", help="GPU memories in GiB, one per GPU (e.g. 80,80,40)."),
    steps: int = typer.Option(DEFAULT_STEPS, "--steps", help="Steps in the round."),
    step_seconds: float = typer.Option(DEFAULT_STEP_SECONDS, "--step-seconds", help="Seconds of one step."),
) -> None:
    """Turn GenTask YAML into a market round (bids for GPU, memory level and start step)."""
    from ..errors import InputError
    from ..model.io import atomic_write

    check_output_file(output, "--output")
    try:
        rnd = gentask_round(file, gpus=gpus, steps=steps, step_seconds=step_seconds)
    except (OSError, InputError, ValueError, UnicodeDecodeError) as exc:
        fail_reading(file, exc)
    try:
        with atomic_write(output) as fh:
            fh.write(json.dumps(rnd.to_dict(), indent=1) + "\n")
    except OSError as exc:
        fail(f"--output: cannot write {exc.filename or output}: {exc.strerror or exc}")
    inst = rnd.expand()
    console.print(f"{len(rnd.tasks)} tasks on {len(rnd.gpus)} GPUs x {rnd.steps} steps: {inst.n_bids} bids for "
                  f"{inst.n_slots} slots; wrote {output}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``round`` to ``app``."""
    app.command("round")(round_command)
