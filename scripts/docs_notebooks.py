"""MkDocs hook: execute ``notebooks/*.ipynb`` with nbclient and render them as pages.

Registered in ``mkdocs.yml`` (``hooks:``). At build time every notebook runs top to bottom in a
fresh kernel (its folder as working directory), and becomes ``notebooks/<stem>.md``: markdown
cells as they are, code cells as Python blocks, text outputs as text blocks and PNG outputs
as pictures (``notebooks/<stem>/out-<cell>-<k>.png``). The outputs exist only in the built site:
the notebooks stay committed without outputs. A cell that raises fails the build, naming the
notebook and the cell.

``GENSOLVER_DOCS_NOTEBOOKS=skip`` renders the notebooks without running them (a quick local
preview; the pages then say so).
"""

from __future__ import annotations

import base64
import logging
import os
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.notebooks")

#: seconds a cell may run
CELL_TIMEOUT = 300
#: seconds a kernel may take to start (a loaded machine starts one slowly; nbclient's default is 60)
KERNEL_STARTUP_TIMEOUT = 300


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}\n"


def render(path: Path, *, execute: bool = True) -> tuple[str, dict[str, bytes]]:
    """The Markdown page of notebook ``path`` and its pictures ``{file name: PNG bytes}``."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    if execute:
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError

        t0 = time.perf_counter()
        try:
            NotebookClient(nb, timeout=CELL_TIMEOUT, startup_timeout=KERNEL_STARTUP_TIMEOUT, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        except CellExecutionError as exc:
            raise RuntimeError(f"{path.name}: a cell failed while building the docs:\n{exc}") from None
        log.info("executed %s in %.1f s", path.name, time.perf_counter() - t0)
    parts: list[str] = []
    images: dict[str, bytes] = {}
    if not execute:
        parts.append('!!! note\n    Rendered without running (GENSOLVER_DOCS_NOTEBOOKS=skip): no outputs.\n')
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            parts.append(cell.source.rstrip() + "\n")
        elif cell.cell_type == "code":
            parts.append(_fence(cell.source, "python"))
            for j, out in enumerate(cell.get("outputs", [])):
                parts.append(_output(out, path.stem, f"out-{k}-{j}.png", images))
    where = f"*`notebooks/{path.name}`, {'executed when the site was built' if execute else 'not executed'}.*\n"
    parts.insert(1 if parts and parts[0].startswith("#") else 0, where)
    return "\n".join(p for p in parts if p), images


def _output(out: Any, stem: str, name: str, images: dict[str, bytes]) -> str:
    kind = out.get("output_type")
    if kind == "stream":
        return _fence(out.get("text", ""), "text")
    if kind in ("execute_result", "display_data"):
        data = out.get("data", {})
        if "image/png" in data:
            images[name] = base64.b64decode(data["image/png"])
            return f"![output]({stem}/{name})\n"
        if "text/plain" in data:
            return _fence(data["text/plain"], "text")
        return ""
    if kind == "error":  # pragma: no cover - execution raises first
        return _fence("\n".join(out.get("traceback", [])), "text")
    return ""


def on_files(files: Any, config: Any) -> Any:
    """Add one generated page per notebook, and its pictures, to the site's files."""
    from mkdocs.structure.files import File

    root = Path(config["config_file_path"]).resolve().parent / "notebooks"
    execute = os.environ.get("GENSOLVER_DOCS_NOTEBOOKS", "run") != "skip"
    for path in sorted(root.glob("*.ipynb")):
        page, images = render(path, execute=execute)
        files.append(File.generated(config, f"notebooks/{path.stem}.md", content=page))
        for name, data in images.items():
            files.append(File.generated(config, f"notebooks/{path.stem}/{name}", content=data))
    return files
