"""Quantities with Kubernetes rules: the one parser of memory sizes (and compute shares).

Every memory amount a user writes (GenTask YAML, ``gensolver run --sim-devices`` and
``--over-grant-tolerance``, :class:`gensolver.executor.SimulatedBackend`) is read here, so
``16G`` means the same amount everywhere. The grammar is Kubernetes' ``resource.Quantity``
[1]_:

=========================  ==========================================================
suffix                     factor
=========================  ==========================================================
``Ki Mi Gi Ti Pi Ei``      binary: 2**10, 2**20, 2**30, 2**40, 2**50, 2**60
``k M G T P E``            decimal: 10**3, 10**6, 10**9, 10**12, 10**15, 10**18
``m``                      10**-3 (milli; a share such as ``500m`` = 0.5)
``e3``, ``E6``, ...         a decimal exponent (``1.5e9``)
none                       1 (a plain number)
=========================  ==========================================================

So ``16G`` is 16,000,000,000 bytes and ``16Gi`` is 17,179,869,184. Suffixes are case
sensitive, as in Kubernetes: ``16g``, ``16GB``, ``16GiB`` and ``16K`` are refused with a
message suggesting ``16G``/``16Gi`` (``16Gi`` for ``16GiB``, ``16k``/``16Ki`` for ``16K``).

Memory is a whole number of bytes: a memory quantity that is not (``500m`` is half a byte,
``1.1Ki`` is 1126.4 bytes) is refused rather than rounded, because a rounding rule would be one
more thing for the writer and the reader to disagree on.

References
----------
.. [1] Kubernetes, "Resource Management for Pods and Containers", section "Memory resource
   units"; the ``k8s.io/apimachinery/pkg/api/resource`` Quantity type.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from ..errors import InputError

__all__ = ["QuantityError", "parse_number", "parse_quantity", "parse_memory_bytes", "BINARY_SUFFIXES", "DECIMAL_SUFFIXES"]

BINARY_SUFFIXES = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
DECIMAL_SUFFIXES = {"m": Decimal("0.001"), "": Decimal(1), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6,
                    "G": Decimal(10) ** 9, "T": Decimal(10) ** 12, "P": Decimal(10) ** 15,
                    "E": Decimal(10) ** 18}
# ASCII digits only: Python's \d (and int(), float()) also take Arabic-Indic and other digits
_FORM = re.compile(r"^\s*\+?((?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d{1,3})|([A-Za-z]*))\s*$", re.ASCII)
_NUMBER = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,4})?\s*", re.ASCII)
_INTEGER = re.compile(r"\s*[+-]?\d{1,18}\s*", re.ASCII)
#: the largest quantity accepted (an exabyte-scale bound that keeps every result a finite float)
_MAX = Decimal(2) ** 80


class QuantityError(InputError):
    """A quantity that cannot be read (an :class:`~gensolver.errors.InputError`, so a
    ``ValueError``); ``field`` names where it came from."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}" if field else message)


def _suggest(number: str, suffix: str) -> str:
    """A hint for a suffix Kubernetes does not know (``GB``, ``g``, ``GiB``, ``K``)."""
    s = suffix.rstrip("bB") if len(suffix) > 1 else suffix
    if s.endswith("i") and s[:-1].upper() + "i" in BINARY_SUFFIXES:
        return f"; write '{number}{s[:-1].upper()}i' (binary, 2**n)"
    head = s[:1]
    if head.upper() == "K":
        return f"; write '{number}k' (10**3) or '{number}Ki' (2**10)"
    if head.upper() in ("M", "G", "T", "P", "E"):
        up = head.upper()
        return f"; write '{number}{up}' (decimal, 10**n) or '{number}{up}i' (binary, 2**n)"
    return ""


def _decimal(value: Any, field: str) -> tuple[Decimal, bool]:
    """The exact value of ``value`` and whether it carried a unit suffix."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise QuantityError(field, f"bad quantity {value!r} (a number or a string such as '16Gi')")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise QuantityError(field, f"bad quantity {value!r} (must be finite)")
        if value < 0:
            raise QuantityError(field, f"bad quantity {value!r} (must not be negative)")
        if isinstance(value, int) and value.bit_length() > 90:
            raise QuantityError(field, f"quantity too large: {value!r}")
        return Decimal(value), False
    if len(value) > 64:
        raise QuantityError(field, f"bad quantity {value[:20]!r}... (longer than 64 characters)")
    m = _FORM.match(value)
    if not m:
        raise QuantityError(field, f"bad quantity {value!r} (expected a number with an optional "
                                   "suffix, e.g. 16Gi, 16G, 512Mi, 500m, 1.5e9)")
    number, exponent, suffix = m.group(1), m.group(2), m.group(3) or ""
    try:
        base = Decimal(number)
    except InvalidOperation:  # pragma: no cover - the pattern admits decimal digits only
        raise QuantityError(field, f"bad quantity {value!r}") from None
    if exponent:
        return base * Decimal(10) ** int(exponent[1:]), False
    if suffix in BINARY_SUFFIXES:
        return base * BINARY_SUFFIXES[suffix], True
    if suffix in DECIMAL_SUFFIXES:
        return base * DECIMAL_SUFFIXES[suffix], bool(suffix)
    raise QuantityError(field, f"bad quantity {value!r}: unknown suffix {suffix!r} (Kubernetes suffixes: "
                               f"{', '.join(BINARY_SUFFIXES)}, {', '.join(s for s in DECIMAL_SUFFIXES if s)})"
                        + _suggest(number, suffix))


def parse_number(text: str, *, field: str, integer: bool = False) -> float:
    """A plain number written with ASCII digits (``float()``/``int()`` would also take ``"٣٠"``,
    full-width digits and ``"1_000"``); ``integer``: at most 18 digits, no point or exponent.

    Examples
    --------
    >>> parse_number("80", field="--gpus"), parse_number("1.5e3", field="x")
    (80.0, 1500.0)
    >>> parse_number("\u0663\u0660", field="--gpus")
    Traceback (most recent call last):
    ...
    gensolver.model.quantity.QuantityError: --gpus: expected a number written with ASCII digits, got '٣٠'
    """
    if not isinstance(text, str) or not (_INTEGER if integer else _NUMBER).fullmatch(text):
        kind = "an integer" if integer else "a number"
        raise QuantityError(field, f"expected {kind} written with ASCII digits, got {text!r}")
    return int(text) if integer else float(text)


def parse_quantity(value: Any, *, field: str = "quantity") -> float:
    """A Kubernetes quantity as a plain number: ``"30Gi"`` -> 32212254720.0, ``"500m"`` -> 0.5.

    Parameters
    ----------
    value : str or int or float
        A non-negative number, or a string with an optional suffix (see the module docstring).
    field : str, keyword-only
        Where the value came from, for the message.

    Raises
    ------
    QuantityError
        ``"<field>: bad quantity '30Gx' ..."`` naming the problem (an unknown suffix with a
        suggestion, a negative or non-finite number, a value over 2**80).
    """
    exact, _ = _decimal(value, field)
    if exact > _MAX:
        raise QuantityError(field, f"quantity too large: {value!r} (at most 2**80)")
    return float(exact)


def parse_memory_bytes(value: Any, *, field: str = "memory") -> int:
    """A memory quantity in bytes, a whole number: ``"16G"`` -> 16000000000, ``"16Gi"`` -> 17179869184.

    A plain number is bytes. A quantity that is not a whole number of bytes (``"500m"``,
    ``"1.1Ki"``, ``0.5``) is refused.

    Raises
    ------
    QuantityError
        As :func:`parse_quantity`, and for a fractional number of bytes.
    """
    exact, _ = _decimal(value, field)
    if exact > _MAX:
        raise QuantityError(field, f"memory size too large: {value!r} (at most 2**80 bytes)")
    if exact != exact.to_integral_value():
        raise QuantityError(field, f"memory must be a whole number of bytes; {value!r} is {exact.normalize():f} "
                                   "bytes (did you mean a suffix such as Mi, Gi or G? 'm' is milli)")
    return int(exact)


def memory_has_unit(value: Any) -> bool:
    """Whether ``value`` is a string with a unit suffix or exponent (``"16Gi"``, ``"1.5e9"``)."""
    if not isinstance(value, str):
        return False
    m = _FORM.match(value)
    return bool(m and (m.group(2) or m.group(3)))
