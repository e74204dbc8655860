"""A wheel holds every file its package has in the checkout: an installed robohal (not
editable) finds its URDFs, protobuf classes, firmware sources, RAPID module and HIL suites."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DISTRIBUTIONS = {
    "core": "robohal",
    "plugins/abb": "robohal_abb",
    "plugins/franka": "robohal_franka",
    "plugins/arduino_planar": "robohal_arduino_planar",
    "plugins/feetech": "robohal_feetech",
}


def _package_files(package_dir: Path) -> set[str]:
    """Paths (relative to src/) of the package's files, as a wheel names them."""
    return {path.relative_to(package_dir.parent).as_posix() for path in package_dir.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}


@pytest.mark.parametrize("folder,package", DISTRIBUTIONS.items(), ids=list(DISTRIBUTIONS.values()))
def test_the_wheel_holds_every_file_of_the_package(tmp_path, folder, package):
    # Built from a clean copy: a build/ folder left in the checkout would lend its stale files.
    source = tmp_path / "source"
    shutil.copytree(REPO / folder, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path / "dist"), str(source)], check=True, timeout=300,
                   capture_output=True, cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    expected = _package_files(REPO / folder / "src" / package)
    assert expected, package
    assert not expected - shipped, sorted(expected - shipped)
