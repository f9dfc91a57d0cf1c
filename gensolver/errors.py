"""The errors gensolver raises, and the argument checks its front ends share.

Every error derives from :class:`GensolverError`, so ``except GensolverError`` catches
anything the package raises on purpose. Each kind also keeps the built-in base callers
have always caught: bad input is a :class:`ValueError`, an argument of the wrong type a
:class:`TypeError` *and* a :class:`ValueError` (a caller may catch either), a missing
backend a :class:`RuntimeError`, a missing optional extra an :class:`ImportError`.

=========================  ==================================================================
:class:`InputError`        a bad input value (argument, option, document); ``ValueError``
:class:`InputTypeError`    an argument of the wrong type; ``TypeError`` and ``InputError``
:class:`UnknownNameError`  a name missing from a registry; the message lists the valid ones
:class:`UnavailableError`  a backend that cannot run here (package, binary, device)
:class:`MissingExtraError` an optional extra is not installed; the message names it
:class:`JournalError`      a journal file that cannot be used (damaged, locked, another plan)
=========================  ==================================================================

The checks (:func:`check_time_limit`, :func:`check_seed`, :func:`check_executor`,
:func:`check_options`) are the one definition of each rule; front ends call them instead of repeating the rule.

Examples
--------
>>> from gensolver.errors import InputError, check_time_limit
>>> check_time_limit(2)
2.0
>>> check_time_limit(None) is None
True
>>> try:
...     check_time_limit(float("nan"))
... except InputError as exc:
...     print(exc)
time_limit must be a positive finite number of seconds or None, got nan
"""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import numpy as np

__all__ = [
    "GensolverError",
    "InputError",
    "InputTypeError",
    "UnknownNameError",
    "UnavailableError",
    "MissingExtraError",
    "JournalError",
    "check_time_limit",
    "check_seed",
    "SEED_LIMIT",
    "check_executor",
    "check_options",
    "check_choice",
    "check_number",
    "missing_extra",
    "require_extra",
    "extras_named",
    "EXTRA_OF_PACKAGE",
    "extra_of",
]


class GensolverError(Exception):
    """Base class of every error gensolver raises on purpose."""


class InputError(GensolverError, ValueError):
    """A bad input value: an argument, an option or a document field (a ``ValueError``)."""


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (a ``TypeError``, and an :class:`InputError` so that
    callers catching ``ValueError`` for bad arguments still catch it)."""


class UnknownNameError(InputError):
    """A name missing from a registry (method, mechanism, policy, family).

    Attributes
    ----------
    kind : str
        What was looked up (``"method"``).
    name : str
        The name asked for.
    valid : tuple of str
        The registered names.
    """

    def __init__(self, message: str, *, kind: str = "", name: str = "", valid: Collection[str] = ()) -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name
        self.valid = tuple(valid)


class UnavailableError(GensolverError, RuntimeError):
    """A backend that cannot run on this machine (package, binary or device missing)."""


class MissingExtraError(GensolverError, ImportError):
    """An optional dependency is not installed; the message names the extra to install.

    The command line's one rule for it: exit status 3 and the ``pip install`` line, no
    traceback (see :func:`gensolver.cli.main`)."""


class JournalError(InputError):
    """A journal file that cannot be used: damaged (the message names the file, the line and
    the field), locked by another live process, written for another plan, or not a journal.
    Used by the executor's journal and by the benchmark runner's ``cells.jsonl``."""


def _is_real(value: Any) -> bool:
    """A real number that is not a bool (NumPy scalars included)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_time_limit(time_limit: Any, *, name: str = "time_limit", optional: bool = True) -> float | None:
    """``time_limit`` as a float of seconds, or ``None`` for no limit.

    Parameters
    ----------
    time_limit : float or None
        Must be a positive finite real number (NumPy scalars count, bools do not); ``None``
        is accepted when ``optional``.
    name : str
        How the message names the value (``"--time-limit"`` in the CLI, ``"MarketConfig.time_limit"``).
    optional : bool
        Whether ``None`` is allowed (the message then says "or None").

    Returns
    -------
    float or None

    Raises
    ------
    InputError
        Not a positive finite number (``InputTypeError`` when not a number at all).
    """
    if time_limit is None and optional:
        return None
    what = f"{name} must be a positive finite number of seconds{' or None' if optional else ''}, got {time_limit!r}"
    if not _is_real(time_limit):
        raise InputTypeError(what)
    if not math.isfinite(time_limit) or time_limit <= 0:
        raise InputError(what)
    return float(time_limit)


#: every seed lies in ``[0, SEED_LIMIT)``: the 32-bit signed range that every backend's random
#: seed accepts (CP-SAT ``random_seed``, HiGHS ``random_seed``) and NumPy's generators too
SEED_LIMIT = 2**31


def check_seed(seed: Any, *, name: str = "seed", error: type[InputError] = InputError) -> int:
    """``seed`` as an ``int``, checked against the one seed rule: an integer in ``[0, 2**31)``.

    Solvers, mechanisms, generators, trace readers, workloads and the simulator all take their
    seeds through this check, so a seed valid for one is valid for every other.

    Parameters
    ----------
    seed : int
        The seed (a Python or NumPy integer; ``bool`` is refused).
    name : str
        How the message names it (``"seed"``, ``"lavi-swamy option seed"``).
    error : type of InputError
        The error to raise (a front end's own :class:`InputError` subclass); the default raises
        :class:`InputTypeError` for a value that is not an integer.

    Raises
    ------
    InputError
        ``seed`` is not an integer, or lies outside ``[0, 2**31)``.

    Examples
    --------
    >>> check_seed(7)
    7
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    gensolver.errors.InputError: seed must be an integer in [0, 2**31), got -1
    """
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise (InputTypeError if error is InputError else error)(f"{name} must be an integer, got {seed!r}")
    if not 0 <= int(seed) < SEED_LIMIT:
        raise error(f"{name} must be an integer in [0, 2**31), got {seed!r}")
    return int(seed)


def check_executor(executor: Any, *, name: str = "executor") -> None:
    """``None`` or a :class:`concurrent.futures.Executor`; else :class:`InputTypeError`."""
    from concurrent.futures import Executor

    if executor is not None and not isinstance(executor, Executor):
        raise InputTypeError(f"{name} must be a concurrent.futures.Executor or None, got {type(executor).__name__}")


def check_choice(name: str, value: Any, options: tuple[str, ...]) -> str:
    """``value`` when it is one of ``options``, else an :class:`~gensolver.errors.InputError` naming ``name``."""
    if value not in options:
        raise InputError(f"{name} must be one of {', '.join(map(repr, options))}, got {value!r}")
    return str(value)


def check_number(name: str, value: Any, low: float, high: float, *, open_top: bool = False) -> float:
    """``value`` as a finite float in ``[low, high]`` (``[low, high)`` with ``open_top``)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and low <= value and (value < high if open_top else value <= high)
    if not ok:
        top = f"< {high:g}" if open_top else f"<= {high:g}"
        raise InputError(f"{name} must be a finite number >= {low:g}" + ("" if math.isinf(high) else f" and {top}")
                         + f", got {value!r}")
    return float(value)


def check_options(options: Any, allowed: Collection[str] | Mapping[str, Any], owner: str) -> dict[str, Any]:
    """``options`` as a dict, every key checked against ``allowed``.

    Parameters
    ----------
    options : mapping or None
        The caller's options.
    allowed : mapping or collection of str
        The valid keys; a mapping also gives their defaults, merged under ``options``.
    owner : str
        Who takes the options, for the message (``"method 'auto'"``, ``"mechanism 'vcg'"``).

    Raises
    ------
    InputError
        ``options`` is not a mapping, or has keys not in ``allowed`` (the message lists the
        unknown and the valid keys).

    Examples
    --------
    >>> check_options({"alpha": 1}, {"alpha": 0.5, "beta": 2}, "method 'x'")
    {'alpha': 1, 'beta': 2}
    >>> check_options({"gamma": 1}, ["alpha"], "method 'x'")
    Traceback (most recent call last):
    ...
    gensolver.errors.InputError: method 'x' does not take option(s) ['gamma']; valid options: ['alpha']
    """
    out = dict(allowed) if isinstance(allowed, Mapping) else {}
    if options is None:
        return out
    if not isinstance(options, Mapping):
        raise InputError(f"options must be a mapping, got {type(options).__name__}")
    unknown = set(options) - set(allowed)
    if unknown:
        raise InputError(f"{owner} does not take option(s) {sorted(map(str, unknown))}; "
                         f"valid options: {sorted(allowed)}")
    out.update(options)
    return out


#: the optional extra (``pyproject.toml``) that installs each importable top-level package
EXTRA_OF_PACKAGE: dict[str, str] = {
    "ortools": "solvers", "pulp": "solvers", "highspy": "solvers",
    "simpy": "sim", "matplotlib": "sim",
    "dask": "dist", "distributed": "dist",
    "pynvml": "gpu",
    "fastapi": "service", "uvicorn": "service", "httpx": "service", "prometheus_client": "service",
    "starlette": "service",
    "mkdocs": "docs", "nbclient": "docs", "nbformat": "docs",
}


def extra_of(module: str) -> str | None:
    """The extra that installs ``module`` (a dotted name), or None for a package of no extra.

    Examples
    --------
    >>> extra_of("ortools.linear_solver.pywraplp"), extra_of("numpy")
    ('solvers', None)
    """
    return EXTRA_OF_PACKAGE.get(module.partition(".")[0])


def missing_extra(package: str, extra: str, feature: str) -> MissingExtraError:
    """The error for ``feature`` needing ``package`` from the optional extra ``extra``.

    Raise it ``from`` the :class:`ImportError` it replaces::

        try:
            import simpy
        except ImportError as exc:
            raise missing_extra("simpy", "sim", "gensolver.sim (the cluster simulator)") from exc

    Examples
    --------
    >>> print(missing_extra("simpy", "sim", "the simulator"))
    the simulator needs the optional package 'simpy', which is not installed: pip install "gensolver[sim]"
    """
    return MissingExtraError(f"{feature} needs the optional package {package!r}, which is not installed: "
                             f'pip install "gensolver[{extra}]"')


def require_extra(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` (from the optional extra ``extra``) for ``feature``, or raise
    :func:`missing_extra`'s :class:`MissingExtraError` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(module.split(".")[0], extra, feature) from exc


@contextmanager
def extras_named(feature: str) -> Iterator[None]:
    """Turn a :class:`ModuleNotFoundError` for a package of an optional extra, raised inside the
    block, into :func:`missing_extra`'s :class:`MissingExtraError` naming the extra (other
    import errors pass unchanged). Front-end functions wrap their work in it, so that a
    core-only install gets the ``pip install`` line, never a bare ``ModuleNotFoundError``.

    Examples
    --------
    >>> try:
    ...     with extras_named("mechanism 'vcg'"):
    ...         raise ModuleNotFoundError("No module named 'ortools'", name="ortools")
    ... except MissingExtraError as exc:
    ...     print(exc)
    mechanism 'vcg' needs the optional package 'ortools', which is not installed: pip install "gensolver[solvers]"
    """
    try:
        yield
    except MissingExtraError:
        raise
    except ModuleNotFoundError as exc:
        extra = extra_of(exc.name or "")
        if extra is None:
            raise
        raise missing_extra((exc.name or "").partition(".")[0], extra, feature) from exc
