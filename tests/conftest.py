"""Shared fixtures: the ``../shared`` folder beside the project root, a wheel of the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The read-only ``shared/`` folder (instance format, traces, examples)."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present beside the project root")
    return SHARED


def wheel_env() -> dict[str, str]:
    """The environment of a process of the wheel's venv: nothing downloaded, no checkout paths."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("GENSOLVER_SUITES", "GENSOLVER_TRACES", "PYTHONPATH", "VIRTUAL_ENV", "GENSOLVER_TEST_HIDE")}
    env["PIP_NO_INDEX"] = "1"  # nothing may be downloaded
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="session")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh venv outside the checkout with a wheel of this checkout.

    The wheel is built from a copy of the sources (``pip wheel --no-deps --no-build-isolation``:
    nothing is downloaded); its dependencies come from the test's own environment through a
    ``.pth`` line naming its site-packages (the editable install there is not seen, since
    ``.pth`` files of an added path are not processed). ``tests/hide_extras.py`` is installed
    beside it, inactive unless ``GENSOLVER_TEST_HIDE`` names packages to hide (an extra left out).
    """
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "gensolver", src / "gensolver",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    dist = base / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(dist), str(src)], check=True, env=wheel_env(), cwd=base, timeout=300)
    wheels = list(dist.glob("gensolver-*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # dependencies from this environment; its own gensolver (editable) is not on this path
    (site / "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    shutil.copy(ROOT / "tests" / "hide_extras.py", site / "gensolver_test_hide_extras.py")
    (site / "zz_gensolver_test_hide_extras.pth").write_text("import gensolver_test_hide_extras\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q",
                    str(wheels[0])], check=True, env=wheel_env(), cwd=base, timeout=300)
    return env_dir / "bin"
