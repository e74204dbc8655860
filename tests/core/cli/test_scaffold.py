"""`robohal new-plugin` makes a plugin that installs and passes its own tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from robohal.cli.main import main


def test_scaffold_installs_registers_and_passes_its_tests(tmp_path):
    result = CliRunner().invoke(main, ["new-plugin", "acme_bot", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "robohal-acme-bot"
    package = root / "src" / "robohal_acme_bot"
    # the shape of every plugin: the package is the plugin, its hooks name their parts by reference
    assert sorted(path.name for path in package.iterdir()) == ["__init__.py", "backend.py", "models.py"]
    assert 'acme_bot = "robohal_acme_bot"\n' in (root / "pyproject.toml").read_text()
    hooks = (package / "__init__.py").read_text()
    assert '"robohal_acme_bot.models:arm2"' in hooks and '"robohal_acme_bot.backend:AcmeBotBackend"' in hooks
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(root)], check=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(site) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    listed = subprocess.run([sys.executable, "-m", "robohal.cli.main", "plugins", "--json"], capture_output=True, text=True,
                            env=env, timeout=120)
    plugin = [p for p in json.loads(listed.stdout)["plugins"] if p["name"] == "acme_bot"]
    assert plugin and plugin[0]["models"] == ["acme_bot.arm2"] and plugin[0]["backends"] == ["acme-bot"]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=root,
                           capture_output=True, text=True, env=env, timeout=600)
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert "15 passed" in tests.stdout


@pytest.mark.parametrize("bad", ["Acme", "9lives", "acme-bot", ""])
def test_bad_names_are_refused(tmp_path, bad):
    result = CliRunner().invoke(main, ["new-plugin", bad, "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "plugin name" in result.output
