"""Readers and writers: ``gensolver.instance/v1`` JSON (plain or gzip) and CATS text.

:func:`read_instance` picks the format from the file's content (gzip magic, a JSON object, or
CATS's ``goods``/``bids`` header), not from its name alone. Writers are atomic: they write a
temporary file beside the target and rename it, so a crash never leaves half a file.

CATS text format (Leyton-Brown, Pearson & Shoham, EC 2000)::

    %% comment
    goods N
    bids M
    dummy D
    <index> <price> <good> <good> ... #

Goods ``0..N-1`` become slots ``g0..g{N-1}`` with capacity ``{"units": 1}``; each dummy good
``N..N+D-1`` becomes one XOR bidder ``d{k}``; a bid without a dummy good is a bidder of its
own, ``b{index}``.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import InputError
from .inputs import GZIP_MAGIC, GzipError, ReadError, decompress_limited, loads_json, max_cats_goods, read_limited
from .instance import Bid, Instance, Slot
from .validate import InstanceError, check_totals, from_dict, mark_validated

__all__ = [
    "read_instance",
    "write_instance",
    "read_cats",
    "write_cats",
    "parse_cats",
    "format_cats",
    "atomic_write",
    "json_safe",
    "inflate_instance_bytes",
]

def json_safe(obj: Any, *, default: Callable[[Any], Any] | None = None) -> Any:
    """``obj`` with every non-finite float (NaN, +-inf) replaced by ``None`` (JSON ``null``) and
    NumPy scalars made plain, through mappings, lists and tuples: strict JSON for result files.

    The one JSON sanitiser of the package. With ``default`` (e.g. ``str``), mapping keys become
    strings and every other value JSON cannot hold goes through ``default``, so the result
    always serialises.

    Examples
    --------
    >>> import numpy as np
    >>> json_safe({"a": float("nan"), "b": [np.int64(2), np.inf], "c": (1.5,)})
    {'a': None, 'b': [2, None], 'c': [1.5]}
    >>> json_safe({1: {"p": object}}, default=lambda o: o.__name__)
    {'1': {'p': 'object'}}
    """
    if isinstance(obj, Mapping):
        return {(k if default is None or isinstance(k, str) else str(k)): json_safe(v, default=default)
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v, default=default) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if default is not None and not (obj is None or isinstance(obj, (str, int, float, bool))):
        return default(obj)
    return obj


def process_umask() -> int:
    """The process's umask, read without changing it where the system allows (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: read by setting (briefly) and restoring it
    os.umask(mask)
    return mask


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success fsync and rename it over ``path``.

    On an exception the temporary file is removed and ``path`` is left untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates the file 0600; the result gets the mode a plain open() would give
        # (an existing file's own mode, else 0666 less the umask)
        try:
            file_mode = target.stat().st_mode & 0o7777
        except OSError:
            file_mode = 0o666 & ~process_umask()
        os.chmod(tmp, file_mode)
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def inflate_instance_bytes(data: bytes, name: str) -> bytes:
    """``data`` inflated when it is gzip (else as it is), within the limits of :mod:`.inputs`.

    Raises :class:`InstanceError` naming ``name`` for corrupt gzip or an inflated size over the
    limit.
    """
    if data[:2] != GZIP_MAGIC:
        return data
    try:
        return decompress_limited(data)
    except GzipError as exc:
        raise InstanceError("", f"truncated or corrupt gzip file {name}: {exc}") from None
    except ReadError as exc:
        raise InstanceError("", f"{name}: {exc}") from None

def _read_bytes(path: Path) -> bytes:
    """The file's bytes, inflated when it is gzip, within the limits of :mod:`.inputs`."""
    try:
        data = read_limited(path)
    except FileNotFoundError:
        raise InstanceError("", f"no such file: {path}") from None
    except IsADirectoryError:
        raise InstanceError("", f"is a directory: {path}") from None
    except ReadError as exc:
        raise InstanceError("", f"{path.name}: {exc}") from None
    except OSError as exc:
        raise InstanceError("", f"cannot read {path}: {exc.strerror or exc}") from None
    if data[:2] == GZIP_MAGIC:
        data = inflate_instance_bytes(data, path.name)
    elif path.suffix == ".gz":
        raise InstanceError("", f"{path.name}: named .gz but not gzip data (first bytes {data[:4]!r})")
    return data


def read_instance(path: str | os.PathLike[str]) -> Instance:
    """Read an instance file, choosing the format from its content.

    Gzip is recognised by its magic bytes (a ``.gz`` name without them is refused); the
    inflated text is JSON when it starts with ``{`` or ``[``, when the name ends in ``.json``
    (or ``.json.gz``), or when it is a JSON scalar such as ``null``; anything else is CATS.
    Sizes are bounded (:mod:`gensolver.model.inputs`).

    Parameters
    ----------
    path : path-like
        A ``gensolver.instance/v1`` JSON file (``.json`` or ``.json.gz``) or a CATS text
        file (plain or gzip).

    Returns
    -------
    Instance
        Validated.

    Raises
    ------
    InstanceError
        For a missing, truncated, corrupt, oversized or invalid file; the message names the
        place.
    """
    p = Path(path)
    data = _read_bytes(p)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # CATS comment lines may carry any bytes (a generator's banner); anything else must
        # be UTF-8 text
        text = data.decode("utf-8", errors="replace")
        if any("\ufffd" in ln and not ln.lstrip().startswith("%") for ln in text.splitlines()):
            raise InstanceError("", f"{p.name} is not UTF-8 text: {exc}") from None
    del data  # the text alone from here on (a file may be hundreds of MiB)
    first = _NON_SPACE.search(text)
    if first is None or (text[first.start()] == "\ufeff" and not _NON_SPACE.search(text, first.start() + 1)):
        raise InstanceError("", f"{p.name} is empty")
    # the first 64 KiB after leading white space decide the format (no copy of the whole text)
    if _looks_like_json(p, text[first.start():first.start() + 65536]):
        try:
            doc = loads_json(text)
        except ReadError as exc:
            raise InstanceError("", f"{p.name}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise InstanceError("", f"{p.name}: invalid or truncated JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        if not isinstance(doc, dict):
            raise InstanceError("", f"{p.name}: expected a JSON object (an instance), got "
                                    f"{'null' if doc is None else type(doc).__name__}")
        return from_dict(doc)
    return parse_cats(text, name=p.name.split(".")[0])


_NON_SPACE = re.compile(r"\S")
_JSON_SCALAR = re.compile(r'^(null|true|false|-?\d+(\.\d+)?([eE][+-]?\d+)?|"[^"]*")\s*$', re.ASCII)


def _looks_like_json(path: Path, stripped: str) -> bool:
    """JSON by content (``{``, ``[``, a BOM, a scalar such as ``null``) or by a ``.json`` name."""
    if stripped[0] in "{[\ufeff" or (len(stripped) < 65536 and _JSON_SCALAR.match(stripped)):
        return True
    if not path.name.lower().endswith((".json", ".json.gz")):
        return False
    # a CATS file named .json is still CATS (the format follows the content)
    head = stripped[:65536].splitlines()
    return not any(ln.startswith("%") or _HEADER.match(ln.strip()) for ln in head)


def write_instance(instance: Instance, path: str | os.PathLike[str], *, format: str | None = None) -> Path:
    """Write ``instance`` atomically; the format follows the name unless ``format`` is given.

    ``*.json.gz`` and ``*.gz`` are gzip-compressed; ``*.txt`` / ``*.cats`` (or
    ``format="cats"``) are CATS text; anything else is JSON.
    """
    p = Path(path)
    fmt = format or ("cats" if p.suffix in (".txt", ".cats") or p.name.endswith((".cats.gz", ".txt.gz")) else "json")
    if fmt == "cats":
        payload = format_cats(instance).encode()
    elif fmt == "json":
        payload = json.dumps(instance.to_dict(), separators=(",", ":"), allow_nan=False).encode()
    else:
        raise InputError(f"unknown format {fmt!r}; valid: 'json', 'cats'")
    if p.suffix == ".gz":
        payload = gzip.compress(payload, mtime=0)
    with atomic_write(p, "wb") as fh:
        fh.write(payload)
    return p


# ---------------------------------------------------------------------------- CATS
_HEADER = re.compile(r"^(goods|bids|dummy)\s+(\d+)\s*$", re.IGNORECASE | re.ASCII)


def parse_cats(text: str, *, name: str = "") -> Instance:
    """Parse CATS text into an :class:`Instance` (see module docstring for the mapping).

    Raises
    ------
    InstanceError
        With pointer ``/line/<n>`` (1-based) for a malformed line, a good out of range, a
        repeated good, a non-finite or negative price, or a count that disagrees with the
        header (e.g. a truncated file).
    """
    header: dict[str, int] = {}
    header_line: dict[str, int] = {}
    limit = max_cats_goods()
    rows: list[tuple[int, str, float, list[int]]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("%"):
            continue
        m = _HEADER.match(line)
        if m:
            key = m.group(1).lower()
            if key in header:
                raise InstanceError(f"/line/{lineno}", f"{key!r} header repeated (first at line {header_line[key]})")
            if len(m.group(2)) > 18:  # int() of thousands of digits is slow, then refused
                raise InstanceError(f"/{key}", f"a count of {len(m.group(2))} digits is not a {key} count")
            if key != "bids" and int(m.group(2)) > limit:
                raise InstanceError(f"/{key}", f"{m.group(2)} {key} is over the limit of {limit} "
                                               "(raise it with GENSOLVER_MAX_CATS_GOODS)")
            header[key] = int(m.group(2))
            header_line[key] = lineno
            continue
        where = f"/line/{lineno}"
        if "goods" not in header or "bids" not in header:
            raise InstanceError(where, "bid line before the 'goods N' and 'bids M' header")
        if not line.isascii():  # int() and float() would read Arabic-Indic or full-width digits
            raise InstanceError(where, "bid line has a non-ASCII character (digits must be 0-9)")
        parts = line.split()
        if parts[-1] != "#":
            raise InstanceError(where, "bid line must end with '#' (truncated file?)")
        parts = parts[:-1]
        if len(parts) < 3:
            raise InstanceError(where, "expected '<index> <price> <good> ... #'")
        try:
            index = int(parts[0])
            price = float(parts[1])
            goods = [int(g) for g in parts[2:]]
        except ValueError as exc:
            raise InstanceError(where, f"not a number: {exc}") from None
        if not math.isfinite(price) or price < 0:
            raise InstanceError(where, f"price must be finite and non-negative, got {parts[1]}")
        rows.append((lineno, parts[0], price, goods))
        del index
    if "goods" not in header:
        raise InstanceError("/goods", "missing 'goods N' header")
    if "bids" not in header:
        raise InstanceError("/bids", "missing 'bids M' header")
    n_goods, n_dummy = header["goods"], header.get("dummy", 0)
    if n_goods + n_dummy > limit:
        raise InstanceError("/dummy", f"{n_goods} goods and {n_dummy} dummy goods are over the limit of {limit} "
                                      "(raise it with GENSOLVER_MAX_CATS_GOODS)")
    if n_goods <= 0:
        raise InstanceError("/goods", "must be positive")
    if len(rows) != header["bids"]:
        raise InstanceError("/bids", f"header says {header['bids']} bids, file has {len(rows)} (truncated file?)")
    if not rows:
        raise InstanceError("/bids", "must not be empty")
    slots = tuple(Slot(f"g{k}", {"units": 1.0}) for k in range(n_goods))
    bids: list[Bid] = []
    seen: set[str] = set()
    for lineno, bid_no, price, goods in rows:
        where = f"/line/{lineno}"
        if bid_no in seen:
            raise InstanceError(where, f"duplicate bid index {bid_no}")
        seen.add(bid_no)
        real: dict[int, None] = {}  # insertion-ordered; membership in O(1), not a list scan per good
        dummy: int | None = None
        for g in goods:
            if 0 <= g < n_goods:
                if g in real:
                    raise InstanceError(where, f"good {g} repeated")
                real[g] = None
            elif n_goods <= g < n_goods + n_dummy:
                if dummy is not None:
                    raise InstanceError(where, "more than one dummy good")
                dummy = g
            else:
                raise InstanceError(where, f"good {g} out of range 0..{n_goods + n_dummy - 1}")
        if not real:
            raise InstanceError(where, "bid names no real good")
        bidder = f"d{dummy - n_goods}" if dummy is not None else f"b{bid_no}"
        bids.append(Bid(f"b{bid_no}", bidder, price, {f"g{g}": {"units": 1.0} for g in real}))
    instance = Instance(slots, tuple(bids), (), name, {"format": "cats"})
    check_totals(instance)
    return mark_validated(instance)


def read_cats(path: str | os.PathLike[str]) -> Instance:
    """Read a CATS text file (plain or gzip)."""
    p = Path(path)
    # comments may carry any bytes (a CATS build's banner, a path): an undecodable byte can
    # only matter on a bid line, where it fails that line's number parsing by name
    return parse_cats(_read_bytes(p).decode("utf-8", errors="replace"), name=p.name.split(".")[0])


def format_cats(instance: Instance) -> str:
    """CATS text for a single-unit instance.

    Every slot must have exactly ``{"units": 1}`` capacity and every demand be one unit.
    Slots become goods in instance order; bidders with several bids get a dummy good.
    Bid indices are the bids' positions.

    Raises
    ------
    ValueError
        If the instance is not single-unit (CATS cannot express it).
    """
    good_of = {}
    for k, s in enumerate(instance.slots):
        if dict(s.capacity) != {"units": 1.0}:
            raise InputError(f"slot {s.id!r} is not a single-unit good; CATS cannot express it")
        good_of[s.id] = k
    n = len(instance.slots)
    groups = instance.bids_of_bidder
    dummy_of: dict[str, int] = {}
    for bidder, bids in groups.items():
        if len(bids) > 1:
            dummy_of[bidder] = n + len(dummy_of)
    lines = [
        "% written by gensolver",
        f"goods {n}",
        f"bids {instance.n_bids}",
        f"dummy {len(dummy_of)}",
        "",
    ]
    for j, bid in enumerate(instance.bids):
        goods = []
        for sid, res in bid.demand.items():
            if dict(res) != {"units": 1.0}:
                raise InputError(f"bid {bid.id!r} demands {dict(res)} of {sid!r}; CATS needs one unit")
            goods.append(good_of[sid])
        if bid.bidder in dummy_of:
            goods.append(dummy_of[bid.bidder])
        lines.append("\t".join([str(j), repr(bid.value), *map(str, goods), "#"]))
    return "\n".join(lines) + "\n"


def write_cats(instance: Instance, path: str | os.PathLike[str]) -> Path:
    """Write CATS text atomically (gzip when the name ends in ``.gz``)."""
    return write_instance(instance, path, format="cats")
