"""'Register new robot plugins', proven through real entry points: the example
plugin in examples/ is installed with pip (into a temporary target folder, so the
project venv is untouched) and robohal finds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "robohal-example-kuka"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(EXAMPLE)],
        check=True, timeout=300,
    )
    return target


def with_path(target: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(target) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_robohal_models_lists_the_installed_example(installed):
    before = subprocess.run([sys.executable, "-m", "robohal.cli.main", "models", "--json"], capture_output=True, text=True, timeout=120)
    assert "kuka.kr6_r700_sixx" not in before.stdout
    after = subprocess.run([sys.executable, "-m", "robohal.cli.main", "models", "--json"], capture_output=True, text=True,
                           env=with_path(installed), timeout=120)
    assert after.returncode == 0, after.stderr
    kuka = [m for m in json.loads(after.stdout) if m["name"] == "kuka.kr6_r700_sixx"]
    assert kuka and kuka[0]["plugin"] == "example_kuka" and kuka[0]["dof"] == 6


def test_the_example_passes_its_tests_and_the_contract_suite_on_sim(installed):
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(EXAMPLE), str(EXAMPLE / "tests"),
         "--hil-target", "sim://?model=kuka.kr6_r700_sixx&realtime=0&q0=0,-1.5708,1.5708,0,0.5,0"],
        capture_output=True, text=True, env=with_path(installed), timeout=600, cwd=EXAMPLE,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
