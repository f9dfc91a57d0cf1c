"""One generic registry: names to entries, loaded lazily, used by every ``name=`` argument.

Solver methods (:mod:`gensolver.solvers.registry`), mechanisms (:data:`gensolver.mechanisms.MECHANISMS`),
instance families (:mod:`gensolver.instances`) and simulator policies
(:data:`gensolver.sim.policies.POLICIES`) are each one :class:`Registry`. An entry is an object,
or an import path ``"package.module:attribute"`` imported the first time the entry is used,
so an entry that needs an optional extra costs nothing until someone asks for it (and
:meth:`Registry.available` can tell whether it would load without importing it).

Examples
--------
>>> from gensolver.registry import Registry
>>> colours = Registry("colour")
>>> colours.register("red", (255, 0, 0))
(255, 0, 0)
>>> colours.register("sqrt", "math:sqrt")  # lazy: math is imported on first use
'math:sqrt'
>>> colours.get("sqrt")(4.0)
2.0
>>> colours.register("red", (250, 0, 0))
Traceback (most recent call last):
...
gensolver.errors.InputError: colour 'red' is already registered (pass replace=True to replace it)
>>> colours.get("blue")
Traceback (most recent call last):
...
gensolver.errors.UnknownNameError: unknown colour 'blue'; valid colours: red, sqrt
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

from .errors import InputError, InputTypeError, UnknownNameError

__all__ = ["Registry"]

T = TypeVar("T")


class _Lazy:
    """An entry not imported yet: ``module:attribute`` and the modules it needs."""

    __slots__ = ("target", "requires")

    def __init__(self, target: str, requires: tuple[str, ...]) -> None:
        module, sep, attr = target.partition(":")
        if not sep or not module or not attr:
            raise InputError(f"a lazy entry must be 'package.module:attribute', got {target!r}")
        self.target = target
        self.requires = requires

    def load(self) -> Any:
        module, _, attr = self.target.partition(":")
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj

    def __repr__(self) -> str:
        return f"<lazy {self.target}>"


class Registry(Generic[T]):
    """Names to entries, some imported on first use.

    Parameters
    ----------
    kind : str
        What an entry is, for messages (``"method"``, ``"instance family"``).
    plural : str, optional
        The plural in "valid ...:" (default ``kind + "s"``; ``""`` for just "valid:").
    error : type, optional
        The :class:`~gensolver.errors.UnknownNameError` subclass raised for an unknown name.
    sort : bool
        List the valid names sorted in messages (default) or in registration order.

    Notes
    -----
    Iteration, ``len`` and ``in`` see every registered name, loaded or not; :meth:`get` (and
    ``registry[name]``) load a lazy entry and keep the loaded object.
    """

    def __init__(self, kind: str, *, plural: str | None = None, error: type[UnknownNameError] = UnknownNameError,
                 sort: bool = True) -> None:
        self.kind = kind
        self.plural = kind + "s" if plural is None else plural
        self.error = error
        self.sort = sort
        self._entries: dict[str, Any] = {}

    # ------------------------------------------------------------------ registering
    def register(self, name: str, entry: T | str, *, replace: bool = False,
                 requires: Sequence[str] = ()) -> T | str:
        """Add ``entry`` under ``name`` and return it.

        Parameters
        ----------
        name : str
        entry : object or str
            The entry, or ``"package.module:attribute"`` to import on first use. (To register a
            plain string as an entry, wrap it.)
        replace : bool
            Replace an entry already registered under ``name``; without it that is refused.
        requires : sequence of str
            Importable modules a lazy entry needs (checked by :meth:`available` without
            importing them).

        Raises
        ------
        ValueError
            ``name`` is taken and ``replace`` is false, or a lazy path is malformed.
        TypeError
            ``name`` is not a non-empty string.
        """
        if not isinstance(name, str) or not name:
            raise InputTypeError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries and not replace:
            raise InputError(f"{self.kind} {name!r} is already registered (pass replace=True to replace it)")
        self._entries[name] = _Lazy(entry, tuple(requires)) if isinstance(entry, str) else entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` (unknown names raise like :meth:`get`)."""
        self._check(name)
        del self._entries[name]

    # ------------------------------------------------------------------ looking up
    def _check(self, name: Any) -> None:
        if not isinstance(name, str):
            raise InputTypeError(f"{self.kind} must be a name, got {type(name).__name__}")
        if name not in self._entries:
            raise self.error(f"unknown {self.kind} {name!r}; valid{' ' + self.plural if self.plural else ''}: "
                             f"{', '.join(self.names(sort=self.sort))}", kind=self.kind, name=name,
                             valid=self.names())

    def get(self, name: str) -> T:
        """The entry called ``name``, imported now if it was registered lazily.

        Raises
        ------
        UnknownNameError
            (or the registry's subclass) for an unknown name; the message lists the valid ones.
        ImportError
            A lazy entry whose module cannot be imported here (a missing extra names itself).
        """
        self._check(name)
        entry = self._entries[name]
        if isinstance(entry, _Lazy):
            entry = entry.load()
            self._entries[name] = entry
        return entry  # type: ignore[no-any-return]

    __getitem__ = get

    def is_loaded(self, name: str) -> bool:
        """Whether the entry ``name`` is an object already (not an import path waiting)."""
        self._check(name)
        return not isinstance(self._entries[name], _Lazy)

    def names(self, *, sort: bool = False) -> list[str]:
        """Every registered name, in registration order (or sorted)."""
        return sorted(self._entries) if sort else list(self._entries)

    def available(self) -> list[str]:
        """The names usable here, without importing lazy entries: a lazy entry's ``requires``
        must all be importable, and an entry with an ``available()`` method (a solver
        :class:`~gensolver.solvers.Method`) must say so."""
        out = []
        for name, entry in self._entries.items():
            if isinstance(entry, _Lazy):
                ok = all(importlib.util.find_spec(m) is not None for m in entry.requires)
            else:
                check = getattr(entry, "available", None)
                ok = True
                if callable(check) and not isinstance(entry, type):
                    res = check()
                    ok = bool(res[0] if isinstance(res, tuple) else res)
            if ok:
                out.append(name)
        return out

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` pairs, every lazy entry loaded."""
        return [(name, self.get(name)) for name in list(self._entries)]

    def values(self) -> list[T]:
        """Every entry, loaded."""
        return [self.get(name) for name in list(self._entries)]

    def snapshot(self) -> dict[str, Any]:
        """A copy of the entries, for :meth:`restore` (tests that register temporary entries)."""
        return dict(self._entries)

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Put back the entries of a :meth:`snapshot`, dropping any registered since."""
        self._entries = dict(snapshot)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"
