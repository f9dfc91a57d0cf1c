"""Deprecated keyword aliases, kept for one release with a :class:`DeprecationWarning`.

The solver of a front end is ``method`` everywhere (:func:`gensolver.solve`,
:func:`gensolver.mechanisms.run_mechanism`, :mod:`gensolver.verify`); ``solver=`` is the old
name, accepted until the next release.

The deprecated aliases of names and arguments (``solver=`` here, ``gensolver.executor.Executor``,
renamed attributes through :func:`warn_renamed`)
warn with :class:`GensolverDeprecationWarning` (a :class:`DeprecationWarning`), so a filter can
single them out: the test suite turns it into an error (``filterwarnings`` in ``pyproject.toml``),
which keeps the package and its tests off the old names, while the tests of the aliases catch it
with ``pytest.warns``.

Examples
--------
>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     method_alias("auto", "greedy", where="run_mechanism")
'greedy'
>>> caught[0].category.__name__, str(caught[0].message)
('GensolverDeprecationWarning', 'run_mechanism: solver= is deprecated; use method= (the same value)')
>>> method_alias("cpsat", None, where="run_mechanism")
'cpsat'
"""

from __future__ import annotations

import warnings
from typing import Any

from .errors import InputError

__all__ = ["GensolverDeprecationWarning", "NOT_GIVEN", "keyword_alias", "method_alias", "option_alias",
           "warn_renamed"]


class GensolverDeprecationWarning(DeprecationWarning):
    """A name or argument of gensolver that goes in the next release (the message names its
    replacement)."""


class _NotGiven:
    """The type of :data:`NOT_GIVEN`."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"


#: the default of a deprecated keyword: tells "not given" from ``None`` (which may mean "no limit")
NOT_GIVEN: Any = _NotGiven()


def keyword_alias(value: Any, old_value: Any, *, old: str, new: str, where: str, default: Any) -> Any:
    """The value of keyword ``new``, or of its deprecated alias ``old`` when that was given.

    ``old_value`` other than :data:`NOT_GIVEN` warns with :class:`GensolverDeprecationWarning`
    and is used; giving both with different values (``value`` not left at ``default``) raises
    :class:`~gensolver.errors.InputError`.

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     keyword_alias(10.0, 3.0, old="time_limit", new="per_solve_limit", where="run_suite", default=10.0)
    3.0
    >>> keyword_alias(10.0, NOT_GIVEN, old="time_limit", new="per_solve_limit", where="run_suite", default=10.0)
    10.0
    """
    if old_value is NOT_GIVEN:
        return value
    warnings.warn(f"{where}: {old}= is deprecated; use {new}= (the same value)", GensolverDeprecationWarning,
                  stacklevel=3)
    if value != default and value != old_value:
        raise InputError(f"{where}: give {new}= only ({old}= is its deprecated alias), got both "
                         f"{new}={value!r} and {old}={old_value!r}")
    return old_value


def method_alias(method: Any, solver: Any, *, where: str, default: Any = "auto") -> Any:
    """The solver method of a front end that takes ``method=`` and the deprecated ``solver=``.

    ``solver`` (when not ``None``) warns with :class:`GensolverDeprecationWarning` and is used; giving
    both with different values (``method`` not left at ``default``) raises
    :class:`~gensolver.errors.InputError`.
    """
    if solver is None:
        return method
    warnings.warn(f"{where}: solver= is deprecated; use method= (the same value)", GensolverDeprecationWarning,
                  stacklevel=3)
    if method is not default and method != default and method != solver:
        raise InputError(f"{where}: give method= only (solver= is its deprecated alias), got both "
                         f"method={method!r} and solver={solver!r}")
    return solver


def option_alias(options: dict[str, Any], old: str, new: str, *, where: str) -> dict[str, Any]:
    """``options`` with the deprecated key ``old`` renamed ``new`` (a
    :class:`GensolverDeprecationWarning`; both keys with different values raise
    :class:`~gensolver.errors.InputError`).

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     option_alias({"sub_solver": "scip"}, "sub_solver", "sub_method", where="method 'auto'")
    {'sub_method': 'scip'}
    """
    if old not in options:
        return options
    warnings.warn(f"{where}: option {old} is deprecated; use {new} (the same value)", GensolverDeprecationWarning,
                  stacklevel=3)
    out = dict(options)
    value = out.pop(old)
    if new in out and out[new] != value:
        raise InputError(f"{where}: give option {new} only ({old} is its deprecated alias), got both "
                         f"{new}={out[new]!r} and {old}={value!r}")
    out[new] = value
    return out


def warn_renamed(where: str, old: str, new: str) -> None:
    """Warn that ``where``'s ``old`` (an attribute or key read by the caller's caller) is now
    ``new``: a :class:`GensolverDeprecationWarning` pointing at the line that used the old name.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_renamed("MarketConfig", "solver", "method")
    >>> str(caught[0].message)
    'MarketConfig: solver is deprecated; use method (the same value)'
    """
    warnings.warn(f"{where}: {old} is deprecated; use {new} (the same value)", GensolverDeprecationWarning,
                  stacklevel=3)
