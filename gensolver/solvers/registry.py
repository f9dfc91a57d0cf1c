"""The method registry: names to solver functions, with availability checks.

A method is a function ``f(instance, *, time_limit, threads, seed, options) -> Allocation``.
Optional backends are imported lazily: a missing package is reported only when its method is
used (or listed by ``gensolver methods``), never on ``import gensolver``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from typing import Callable, Protocol

from ..errors import InputTypeError, MissingExtraError, UnavailableError, UnknownNameError
from ..model import Instance
from ..registry import Registry
from .result import Allocation

__all__ = ["Method", "MethodFn", "METHODS", "register", "get_method", "list_methods", "UnknownMethodError",
           "BackendUnavailableError"]


class MethodFn(Protocol):
    def __call__(  # noqa: D102
        self,
        instance: Instance,
        *,
        time_limit: float | None,
        threads: int | None,
        seed: int,
        options: dict,
    ) -> Allocation: ...


class UnknownMethodError(UnknownNameError):
    """An unknown method name; the message lists the valid ones."""


class BackendUnavailableError(UnavailableError):
    """The method's backend package (or binary) is not installed on this machine."""


class BackendNotInstalledError(BackendUnavailableError, MissingExtraError):
    """The method's Python package is not installed: the message ends with the ``pip install``
    line of its extra (the command line exits 3, as for every missing extra)."""


@dataclass(frozen=True)
class Method:
    """A registered method.

    Attributes
    ----------
    name : str
    target : str or callable
        ``"module:function"`` implementing it (imported on first use), or the function.
    exact : bool
        Whether it proves optimality when given enough time.
    requires : tuple of str
        Importable modules it needs.
    description : str
    install_hint : str
    hints : bool
        Takes a warm start, ``options={"hint": [bid ids]}`` (callers such as VCG's pivots pass
        one only to methods that declare it).
    threads : bool
        Uses the ``threads`` argument (the others accept and ignore it).
    deterministic : bool
        The answer depends only on the instance, ``seed`` and options, never on timing or on
        thread interleaving (``auto`` is so only with ``options={"deterministic": True}``).
    check : callable, optional
        ``check() -> (ok, reason)``: an availability test beyond ``requires`` (run by
        :meth:`available`).
    """

    name: str
    target: str | Callable[..., Allocation]
    exact: bool
    requires: tuple[str, ...]
    description: str
    install_hint: str = 'pip install "gensolver[solvers]"'
    hints: bool = False
    threads: bool = False
    deterministic: bool = False
    check: Callable[[], tuple[bool, str]] | None = None

    def missing(self) -> str | None:
        """The first package of :attr:`requires` that is not installed, or None."""
        return next((mod for mod in self.requires if importlib.util.find_spec(mod) is None), None)

    def available(self) -> tuple[bool, str]:
        """``(True, "")`` when usable here, else ``(False, reason)``."""
        mod = self.missing()
        if mod is not None:
            return False, f"Python package {mod!r} is not installed ({self.install_hint})"
        if self.check is not None:
            return self.check()
        return True, ""

    def load(self) -> MethodFn:
        """Import and return the implementing function (raises if unavailable)."""
        ok, why = self.available()
        if not ok:
            cls = BackendNotInstalledError if self.missing() is not None else BackendUnavailableError
            raise cls(f"method {self.name!r} is unavailable: {why}")
        if callable(self.target):
            return self.target
        module, func = self.target.split(":")
        return getattr(importlib.import_module(module), func)


#: every method by name (the generic :class:`gensolver.registry.Registry`)
METHODS: Registry[Method] = Registry("method", error=UnknownMethodError)


def _pulp_check(solver_name: str) -> Callable[[], tuple[bool, str]]:
    """Availability of a PuLP solver *without importing PuLP* when it is not loaded yet.

    Importing PuLP loads highspy globally, which makes OR-Tools' HiGHS unusable in the same
    process (see :func:`_ortools_highs_check`); merely listing methods must not do that. So
    unless PuLP is already imported, the check looks for PuLP's bundled CBC binary or for
    highspy on disk.
    """

    def check() -> tuple[bool, str]:
        if "pulp" in sys.modules:
            from .exact.pulp_import import import_pulp

            pulp = import_pulp()
            if solver_name not in pulp.listSolvers(onlyAvailable=True):
                return False, f"PuLP's {solver_name} solver is not available here"
            return True, ""
        spec = importlib.util.find_spec("pulp")
        if spec is None or not spec.submodule_search_locations:
            return False, "Python package 'pulp' is not installed"
        if solver_name == "HiGHS":
            ok = importlib.util.find_spec("highspy") is not None
            return (True, "") if ok else (False, "PuLP's HiGHS interface needs the 'highspy' package")
        import glob
        import os
        import shutil

        root = list(spec.submodule_search_locations)[0]
        bundled = glob.glob(os.path.join(root, "solverdir", "cbc", "*", "*", "cbc*"))
        if bundled or shutil.which("cbc"):
            return True, ""
        return False, "PuLP's bundled CBC binary is missing and no 'cbc' is on PATH"

    return check


def _ortools_highs_check() -> tuple[bool, str]:
    """OR-Tools' bundled HiGHS is unsafe once PuLP has loaded highspy before OR-Tools.

    PuLP imports highspy, whose HiGHS differs from the one bundled in OR-Tools; when highspy
    is loaded first, ``pywraplp``'s HiGHS crashes the process (segmentation fault) on its next
    solve. gensolver imports PuLP through
    :func:`~gensolver.solvers.exact.pulp_import.import_pulp`, which loads OR-Tools first, so
    both coexist; only a process that imported PuLP by itself first gets the method reported
    unavailable instead of a crash.
    """
    from .exact.pulp_import import ortools_highs_safe

    if not ortools_highs_safe():
        return False, ("PuLP has loaded highspy's HiGHS in this process before OR-Tools, which clashes with "
                       "OR-Tools' bundled HiGHS (segfault); use 'pulp-highs', or 'highs' in a process "
                       "that imports gensolver's solvers before pulp")
    return True, ""


def register(method: Method, *, replace: bool = False) -> Method:
    """Add ``method`` to the registry; a name already taken is refused unless ``replace=True``."""
    if not isinstance(method, Method):
        raise InputTypeError(f"register() takes a Method, got {type(method).__name__}")
    METHODS.register(method.name, method, replace=replace)
    return method


def get_method(name: str) -> Method:
    """The registered :class:`Method` called ``name``; unknown names list the valid ones."""
    return METHODS.get(name)


def list_methods(*, only_available: bool = False) -> list[Method]:
    """All registered methods (or only those usable here), in registration order."""
    methods = METHODS.values()
    if only_available:
        methods = [m for m in methods if m.available()[0]]
    return methods


_ORTOOLS = ("ortools",)
_PULP = ("pulp",)
for _m in (
    Method("auto", "gensolver.solvers.auto:solve_auto", True, (),
           "anytime: greedy, column-generation LP bound, reduced-cost fixing + LNS with CP-SAT/SCIP sub-MIPs; never worse than greedy",
           threads=True),
    Method("cpsat", "gensolver.solvers.exact.cpsat:solve_cpsat", True, _ORTOOLS, "OR-Tools CP-SAT", hints=True, threads=True),
    Method("scip", "gensolver.solvers.exact.ortools_linear:solve_scip", True, _ORTOOLS, "SCIP through OR-Tools' linear solver wrapper",
           hints=True, threads=True),
    Method("highs", "gensolver.solvers.exact.ortools_linear:solve_highs", True, _ORTOOLS, "HiGHS MIP through OR-Tools' linear solver wrapper",
           check=_ortools_highs_check, hints=True, threads=True),
    Method("cbc", "gensolver.solvers.exact.ortools_linear:solve_cbc", True, _ORTOOLS, "CBC through OR-Tools' linear solver wrapper",
           hints=True, threads=True),
    Method("pulp-cbc", "gensolver.solvers.exact.pulp_backend:solve_pulp_cbc", True, _PULP, "CBC through PuLP (bundled binary)",
           check=_pulp_check("PULP_CBC_CMD"), hints=True, threads=True),
    Method("pulp-highs", "gensolver.solvers.exact.pulp_backend:solve_pulp_highs", True, ("pulp", "highspy"),
           "HiGHS through PuLP's highspy interface", check=_pulp_check("HiGHS"), hints=True, threads=True),
    Method("greedy", "gensolver.solvers.approximation.greedy:solve_greedy", False, (),
           "Lehmann-O'Callaghan-Shoham greedy (value / sqrt(size)), first fit, O(B log B + nnz)", deterministic=True),
    Method("lp", "gensolver.solvers.approximation.lp:solve_lp", False, (),
           "LP relaxation (HiGHS via SciPy) for a certified bound, plus LP-guided rounding and repair", deterministic=True),
):
    register(_m)
