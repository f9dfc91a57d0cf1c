"""Bounded readers for untrusted input files: size limits, strict JSON, safe YAML.

Every file the command line reads (instances, plans, GenTask YAML, suite manifests) goes
through these helpers, so that a tiny hostile file cannot take unbounded memory or time and
a malformed one gets a message naming what is wrong instead of a traceback:

- :func:`read_limited` reads at most :func:`max_file_bytes` bytes, also from ``/dev/zero``,
  a FIFO or any other non-regular file, and refuses a directory;
- :func:`decompress_limited` inflates gzip (all members) up to :func:`max_decompressed_bytes`;
- :func:`loads_json` refuses duplicate object keys, integers longer than
  :data:`MAX_INT_DIGITS` digits and nesting deeper than the interpreter can parse
  (:class:`RecursionError`), and names a UTF-8 byte-order mark;
- :func:`loads_yaml_all` is PyYAML's safe loader that refuses aliases (``*name``: the "billion
  laughs" expansion), merge keys (``<<``) and duplicate mapping keys.

Limits (documented in ``docs/reference/instance-format.md``), each overridable by an
environment variable holding a positive integer:

==============================  =========================================  ==================
variable                        limit                                      default
==============================  =========================================  ==================
``GENSOLVER_MAX_FILE_BYTES``    bytes read from one input file             268435456 (256 MiB)
``GENSOLVER_MAX_INFLATED_BYTES`` bytes a gzip file may inflate to           268435456 (256 MiB)
``GENSOLVER_MAX_CATS_GOODS``    ``goods N`` (plus ``dummy D``) of a CATS file  1000000
``GENSOLVER_MAX_TASK_SECONDS``  a GenTask's ``computeTime.duration``        31622400 (366 days)
``GENSOLVER_MAX_MEMORY_LEVELS`` a round's ``memory_levels``                 1024
``GENSOLVER_MAX_ROUND_ENTRIES`` slots plus bid-slot entries of an expanded  4000000
                                round (:meth:`GpuRound.expand`)
``GENSOLVER_MAX_TASKS``         tasks of a synthetic workload, bids or       100000
                                tasks of a generated instance
``GENSOLVER_MAX_GENERATED_GOODS`` goods, cities or GPUs of a generator        4096
==============================  =========================================  ==================

The size model: each reader or generator states its work as a function of its input's sizes
and checks it against these limits *before* allocating (a round's expansion costs
``gpus * steps`` slots plus, per task, ``levels * groups * starts * gpus * length`` demand
entries, computed in closed form; a CATS file costs its bytes; a synthetic workload its task
count). A refusal names the field and the variable that raises the limit.
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import yaml

from ..errors import InputError

__all__ = [
    "ReadError",
    "GzipError",
    "read_limited",
    "read_head",
    "iter_lines_limited",
    "MAX_LINE_BYTES",
    "decompress_limited",
    "loads_json",
    "loads_yaml_all",
    "compose_yaml_all",
    "max_file_bytes",
    "max_decompressed_bytes",
    "max_cats_goods",
    "max_task_seconds",
    "max_memory_levels",
    "max_round_entries",
    "max_tasks",
    "max_generated_goods",
    "SizeLimitError",
    "check_size",
    "MAX_INT_DIGITS",
    "GZIP_MAGIC",
]

GZIP_MAGIC = b"\x1f\x8b"
#: longest integer literal accepted in JSON (a double's range needs 309 digits)
MAX_INT_DIGITS = 400
#: longest line of a line-oriented input (CSV traces); a trace row is a few hundred bytes
MAX_LINE_BYTES = 1 << 20
_BOM = "\ufeff"


class ReadError(InputError):
    """An input file that cannot be read safely; the message says why (no file name: callers
    add it in their own error type). An :class:`gensolver.errors.InputError`."""


class GzipError(ReadError):
    """Truncated or corrupt gzip data."""


class SizeLimitError(InputError):
    """Work an input asks for beyond a documented limit (the message names the field, the
    limit and the environment variable that raises it)."""

    def __init__(self, field: str, amount: int | float, limit: int, variable: str, what: str) -> None:
        self.field = field
        self.amount = amount
        self.limit = limit
        self.variable = variable
        super().__init__(f"{field}: {what} {amount:.4g} is over the limit of {limit} (raise it with {variable})")


def _env_limit(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ReadError(f"environment variable {name} must be a positive integer (bytes/count), got {raw!r}") from None
    if value <= 0:
        raise ReadError(f"environment variable {name} must be a positive integer, got {raw!r}")
    return value


def max_file_bytes() -> int:
    """Most bytes read from one input file (``GENSOLVER_MAX_FILE_BYTES``, default 256 MiB)."""
    return _env_limit("GENSOLVER_MAX_FILE_BYTES", 256 * 2 ** 20)


def max_decompressed_bytes() -> int:
    """Most bytes a gzip input may inflate to (``GENSOLVER_MAX_INFLATED_BYTES``, default 256 MiB)."""
    return _env_limit("GENSOLVER_MAX_INFLATED_BYTES", 256 * 2 ** 20)


def max_cats_goods() -> int:
    """Most goods (real plus dummy) a CATS header may declare (``GENSOLVER_MAX_CATS_GOODS``, default 10**6)."""
    return _env_limit("GENSOLVER_MAX_CATS_GOODS", 1_000_000)


def max_task_seconds() -> int:
    """Longest GenTask duration in seconds (``GENSOLVER_MAX_TASK_SECONDS``, default 366 days): a
    simulated task runs one round boundary per ``lease`` steps, so its length is its cost."""
    return _env_limit("GENSOLVER_MAX_TASK_SECONDS", 366 * 86400)


def max_memory_levels() -> int:
    """Most memory levels a round may offer per task (``GENSOLVER_MAX_MEMORY_LEVELS``, default 1024)."""
    return _env_limit("GENSOLVER_MAX_MEMORY_LEVELS", 1024)


def max_round_entries() -> int:
    """Most slots plus demand entries an expanded round may have (``GENSOLVER_MAX_ROUND_ENTRIES``,
    default 4,000,000: about 1 GiB of Python objects)."""
    return _env_limit("GENSOLVER_MAX_ROUND_ENTRIES", 4_000_000)


def max_tasks() -> int:
    """Most tasks a synthetic workload or bids a generator may make (``GENSOLVER_MAX_TASKS``, default 100,000)."""
    return _env_limit("GENSOLVER_MAX_TASKS", 100_000)


def max_generated_goods() -> int:
    """Most goods (cities, GPUs) a generator may be asked for (``GENSOLVER_MAX_GENERATED_GOODS``,
    default 4096: the ``arbitrary`` family's n_goods x n_goods matrix is then 128 MiB)."""
    return _env_limit("GENSOLVER_MAX_GENERATED_GOODS", 4096)


def check_size(field: str, amount: int | float, limit: int, variable: str, what: str) -> None:
    """Raise :class:`SizeLimitError` when ``amount`` is over ``limit``."""
    if amount > limit:
        raise SizeLimitError(field, amount, limit, variable, what)


def read_limited(path: str | os.PathLike[str], *, limit: int | None = None) -> bytes:
    """The bytes of ``path``, at most ``limit`` (default :func:`max_file_bytes`).

    A regular file larger than the limit is refused before it is read; any other readable file
    (``/dev/zero``, a FIFO, ``/proc`` entries) is read until the limit and refused past it.

    Raises
    ------
    FileNotFoundError, IsADirectoryError, PermissionError, OSError
        As ``open`` raises them (callers turn them into their own message).
    ReadError
        The file is larger than the limit (the message names the limit and its variable).
    """
    cap = max_file_bytes() if limit is None else limit
    p = Path(path)
    with open(p, "rb") as fh:
        st = os.fstat(fh.fileno())
        if stat.S_ISDIR(st.st_mode):  # pragma: no cover - open() refuses a directory on Linux
            raise IsADirectoryError(21, "Is a directory", str(p))
        if stat.S_ISREG(st.st_mode) and st.st_size > cap:
            raise ReadError(f"file is {st.st_size} bytes, over the limit of {cap} "
                             "(raise it with GENSOLVER_MAX_FILE_BYTES)")
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise ReadError(f"file is over the limit of {cap} bytes (not a regular file, or it grew); "
                         "raise the limit with GENSOLVER_MAX_FILE_BYTES")
    return data


def read_head(path: str | os.PathLike[str], size: int = 65536) -> bytes:
    """At most the first ``size`` bytes of ``path`` (format sniffing: one bounded read, also from
    ``/dev/zero`` or a FIFO; a FIFO with no writer blocks in ``open`` as any reader would).

    Raises
    ------
    FileNotFoundError, IsADirectoryError, PermissionError, OSError
        As ``open`` raises them.
    """
    with open(Path(path), "rb") as fh:
        return fh.read(size)


def iter_lines_limited(fh: BinaryIO, *, limit: int | None = None, max_line: int = MAX_LINE_BYTES,
                       encoding: str = "utf-8-sig") -> Iterator[str]:
    """The lines of the binary file ``fh`` as text (ends kept, as ``csv`` wants them), read
    lazily: at most ``limit`` bytes in all (default :func:`max_file_bytes`) and ``max_line``
    bytes per line.

    Raises (while iterating) :class:`ReadError` past either limit (``/dev/zero`` has no line
    end: it is refused after ``max_line`` bytes) and :class:`UnicodeDecodeError` for bytes that
    are not ``encoding``; a ``utf-8-sig`` byte-order mark is dropped from the first line.
    """
    cap = max_file_bytes() if limit is None else limit
    total = 0
    first = True
    while True:
        raw = fh.readline(max_line + 1)
        if not raw:
            return
        total += len(raw)
        if total > cap:
            raise ReadError(f"file is over the limit of {cap} bytes; raise it with GENSOLVER_MAX_FILE_BYTES")
        if len(raw) > max_line:
            raise ReadError(f"a line is longer than {max_line} bytes (not a text file of rows?)")
        yield raw.decode(encoding if first else encoding.replace("-sig", ""))
        first = False


def decompress_limited(data: bytes, *, limit: int | None = None) -> bytes:
    """Inflate gzip ``data`` (every member, as :func:`gzip.decompress`) to at most ``limit`` bytes.

    Raises
    ------
    ReadError
        Truncated or corrupt data, or output over the limit (default :func:`max_decompressed_bytes`).
    """
    cap = max_decompressed_bytes() if limit is None else limit
    out: list[bytes] = []
    size = 0
    rest = data
    while rest:
        d = zlib.decompressobj(wbits=31)  # 16 + 15: a gzip header and trailer
        try:
            chunk = d.decompress(rest, cap + 1 - size)
        except zlib.error as exc:
            raise GzipError(str(exc)) from None
        size += len(chunk)
        out.append(chunk)
        if size > cap or d.unconsumed_tail:
            raise ReadError(f"gzip data inflates to more than the limit of {cap} bytes "
                             "(raise it with GENSOLVER_MAX_INFLATED_BYTES)")
        if not d.eof:
            raise GzipError("it ends inside a compressed stream")
        rest = d.unused_data
        if rest and rest[:2] != GZIP_MAGIC:
            if rest.strip(b"\0"):  # gzip(1) tolerates trailing zero padding only
                raise GzipError("trailing garbage after the gzip data")
            break
    return out[0] if len(out) == 1 else b"".join(out)  # one member: no second copy


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ReadError(f"duplicate key {key!r} in one JSON object")
        out[key] = value
    return out


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise ReadError(f"integer with {digits} digits (at most {MAX_INT_DIGITS}): {text[:20]}...")
    return int(text)


def loads_json(text: str) -> Any:
    """Strict JSON: duplicate keys, integers over :data:`MAX_INT_DIGITS` digits and too-deep
    nesting are refused (``NaN``/``Infinity`` are read, for the validator to name their place).

    Raises
    ------
    ReadError
        For those; the message says which.
    json.JSONDecodeError
        Malformed JSON (with line and column). A leading UTF-8 byte-order mark is reported
        as such.
    """
    if text.startswith(_BOM):
        raise ReadError("file starts with a UTF-8 byte-order mark (BOM); JSON must not have one "
                         "(save it as UTF-8 without BOM)")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_parse_int)
    except RecursionError:
        raise ReadError("JSON nested too deeply") from None


# ---------------------------------------------------------------------------- YAML
class _StrictLoader(yaml.SafeLoader):
    """Safe loader without aliases (no exponential expansion) and without duplicate keys."""

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.constructor.ConstructorError(
                None, None, f"YAML aliases (*{event.anchor}) are not accepted here; write the value out",
                event.start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:  # type: ignore[override]
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # '<<': keys that override unseen
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        "YAML merge keys (<<) are not accepted here; write the keys out", key_node.start_mark)
                key = self.construct_object(key_node, deep=True)
                try:
                    dup = key in seen
                except TypeError:  # an unhashable key: the base class reports it
                    break
                if dup:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, f"duplicate key {key!r}",
                        key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def compose_yaml_all(text: str) -> list[Any]:
    """The node trees of every document of ``text`` (aliases refused), for line numbers."""
    try:
        return list(yaml.compose_all(text, Loader=_StrictLoader))
    except RecursionError:
        raise ReadError("YAML nested too deeply") from None


def loads_yaml_all(text: str) -> list[Any]:
    """Every document of ``text`` with the strict safe loader.

    Raises
    ------
    yaml.YAMLError
        Malformed YAML, an alias, a duplicate key (with the mark of the place).
    ReadError
        Nesting too deep.
    """
    try:
        return list(yaml.load_all(text, Loader=_StrictLoader))
    except RecursionError:
        raise ReadError("YAML nested too deeply") from None
