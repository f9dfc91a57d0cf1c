"""How long the suite waits for an event before it calls the wait a hang.

Every ceiling on a wait in the suite (a server answering ``/healthz``, a daemon coming up, a
job ending) is a hang detector, never a speed check: the wait returns as soon as its event
happens, so a longer ceiling costs nothing when things work. A process start that takes 2 s on
a quiet machine took over 30 s on a 2-core machine at load 12 (nine service tests failed that
way), so ceilings written for a quiet machine are scaled by :data:`PATIENCE`:

- ``GENSOLVER_TEST_PATIENCE`` when set (a positive number), else
- ``2 x max(1, load per core)`` (the 1-minute load average when the worker starts, over the
  cores), at most 20.

>>> patience(10.0) >= 10.0
True
>>> factor_from("3") == 3.0
True
"""
from __future__ import annotations

import os

#: the environment variable that sets :data:`PATIENCE` by hand
ENV = "GENSOLVER_TEST_PATIENCE"


def factor_from(text: str | None, *, load: float | None = None, cores: int | None = None) -> float:
    """The patience factor from ``$GENSOLVER_TEST_PATIENCE`` (``text``) or, when it is unset or
    empty, from the load per core (``load`` and ``cores``; the machine's when ``None``).

    Raises
    ------
    ValueError
        ``text`` is not a positive finite number (the variable is named).
    """
    if text is not None and text.strip():
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{ENV} must be a positive number, got {text!r}") from None
        if not (0 < value < float("inf")):
            raise ValueError(f"{ENV} must be a positive number, got {text!r}")
        return value
    return min(20.0, 2.0 * max(1.0, load_per_core(load=load, cores=cores)))


def load_per_core(*, load: float | None = None, cores: int | None = None) -> float:
    """The 1-minute load average over the cores (``load`` and ``cores``: the machine's when
    ``None``; 0 where the platform has no load average)."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # not available on this platform
            load = 0.0
    return load / (cores or os.cpu_count() or 1)


#: the factor every ceiling on a wait is multiplied by (see the module docstring)
PATIENCE = factor_from(os.environ.get(ENV))


def patience(seconds: float) -> float:
    """``seconds`` (a ceiling chosen for a quiet machine) times :data:`PATIENCE`."""
    return seconds * PATIENCE
