"""`robohal demo` (what `make demo` runs): every installed robot completes its task."""

import subprocess
import sys

import robohal
from robohal.demo import TASKS


def test_demo_drives_every_installed_simulator_and_writes_plots(tmp_path):
    out = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "robohal.cli", "demo", "--out", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    installed = {spec.scheme for spec in robohal.backends()}
    expected = [name for name, scheme, _, _ in TASKS if scheme in installed]
    assert expected, "no robot plugin is installed"
    for name in expected:
        assert f"done  {name}" in result.stdout
        plot = out / f"{name.lower().replace(' ', '-')}.png"
        assert plot.exists() and plot.stat().st_size > 10_000
    assert "robohal demo" in result.stdout and "failed" not in result.stdout


def test_demo_says_why_there_are_no_plots(monkeypatch, tmp_path, capsys):
    from robohal import demo

    monkeypatch.setattr(demo, "TASKS", [("nothing", "no-such-scheme", None, None)])
    monkeypatch.setattr(demo, "matplotlib_pyplot", lambda: None)
    assert demo.run_demo(str(tmp_path)) == 0
    assert "matplotlib is not installed (pip install 'robohal[plots]')" in capsys.readouterr().out
