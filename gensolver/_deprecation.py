"""Deprecated keyword aliases, kept for one release with a :class:`DeprecationWarning`.

The solver of a front end is ``method`` everywhere (:func:`gensolver.solve`,
:func:`gensolver.mechanisms.run_mechanism`, :mod:`gensolver.verify`); ``solver=`` is the old
name, accepted until the next release.

Examples
--------
>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     method_alias("auto", "greedy", where="run_mechanism")
'greedy'
>>> caught[0].category.__name__, str(caught[0].message)
('DeprecationWarning', 'run_mechanism: solver= is deprecated; use method= (the same value)')
>>> method_alias("cpsat", None, where="run_mechanism")
'cpsat'
"""

from __future__ import annotations

import warnings
from typing import Any

from .errors import InputError

__all__ = ["method_alias"]


def method_alias(method: Any, solver: Any, *, where: str, default: Any = "auto") -> Any:
    """The solver method of a front end that takes ``method=`` and the deprecated ``solver=``.

    ``solver`` (when not ``None``) warns with :class:`DeprecationWarning` and is used; giving
    both with different values (``method`` not left at ``default``) raises
    :class:`~gensolver.errors.InputError`.
    """
    if solver is None:
        return method
    warnings.warn(f"{where}: solver= is deprecated; use method= (the same value)", DeprecationWarning, stacklevel=3)
    if method is not default and method != default and method != solver:
        raise InputError(f"{where}: give method= only (solver= is its deprecated alias), got both "
                         f"method={method!r} and solver={solver!r}")
    return solver
