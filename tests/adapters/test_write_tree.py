"""``gensolver.adapters.common.write_tree``: the folder appears whole, with the mode a plain
``mkdir`` would give under the process's umask (read by :func:`gensolver.model.io.process_umask`,
the package's one umask reader), and nothing of the user's is overwritten."""

from __future__ import annotations

import os
import stat

import pytest

from gensolver.adapters.common import AdapterError, write_tree


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_the_folder_gets_the_mode_mkdir_would(tmp_path, mask) -> None:
    old = os.umask(mask)
    try:
        out = write_tree(tmp_path / "out", {"a.sh": "echo a\n", "sub/b.txt": "b"}, executable=("a.sh",))
        (tmp_path / "plain").mkdir()  # the independent reference: what the system gives a folder
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == stat.S_IMODE((tmp_path / "plain").stat().st_mode) == 0o777 & ~mask
    assert (out / "sub" / "b.txt").read_text() == "b" and os.access(out / "a.sh", os.X_OK)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left


def test_a_folder_with_files_is_refused_and_kept(tmp_path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("keep")
    with pytest.raises(AdapterError, match="not an empty folder"):
        write_tree(tmp_path / "out", {"a": "x"})
    assert (tmp_path / "out" / "mine.txt").read_text() == "keep"
