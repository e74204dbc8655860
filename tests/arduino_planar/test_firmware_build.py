"""Building the firmware and the harness with make, and the toolchain check."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from robohal_arduino_planar import firmware


def test_toolchain_missing_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))          # no avr-gcc, no make, no cc
    message = firmware.toolchain_missing()
    assert message is not None and "avr-gcc" in message and "apt install gcc-avr" in message
    assert "cc" in _missing_tools(message)               # the host compiler builds the simavr harness
    flashing_only = firmware.toolchain_missing(simulation=False)
    assert flashing_only is not None and "avr-gcc" in _missing_tools(flashing_only)
    assert "cc" not in _missing_tools(flashing_only) and "libsimavr" not in _missing_tools(flashing_only)


def _missing_tools(message: str) -> list[str]:
    return message.split(":")[0].removeprefix("missing ").split(", ")


def test_sources_ship_in_the_package_and_build_elsewhere(monkeypatch, tmp_path):
    monkeypatch.delenv("ROBOHAL_ARDUINO_DIR", raising=False)
    monkeypatch.delenv("ROBOHAL_ARDUINO_BUILD", raising=False)
    package = Path(firmware.__file__).resolve().parent
    assert firmware.source_dir() == package / "avr"
    for name in ("Makefile", "simavr_harness.c", "robohal_planar/robohal_planar.ino"):
        assert (firmware.source_dir() / name).is_file(), name
    assert firmware.sketch_dir() == firmware.source_dir() / "robohal_planar"
    # A cache directory per source directory, never inside the (possibly read-only) package.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    build = firmware.build_dir()
    assert build.parent == tmp_path / "cache" / "robohal" and package not in build.parents
    monkeypatch.setenv("ROBOHAL_ARDUINO_DIR", str(tmp_path))
    assert firmware.source_dir() == tmp_path.resolve()
    assert firmware.build_dir() != build
    monkeypatch.setenv("ROBOHAL_ARDUINO_BUILD", str(tmp_path / "out"))
    assert firmware.build_dir() == tmp_path.resolve() / "out"


def _make(target: str) -> list[str]:
    proc = subprocess.run(["make", "-s", "-C", str(firmware.source_dir()), f"BUILD={firmware.build_dir()}",
                           target], capture_output=True, text=True, timeout=300, check=True)
    return proc.stdout.splitlines()


def test_make_firmware_prints_the_elf_path_last_and_is_incremental(firmware_build):
    elf, _ = firmware_build
    assert elf.is_absolute() and elf.suffix == ".elf" and elf.is_file()
    before = elf.stat().st_mtime_ns
    lines = _make("firmware")
    assert lines == [str(elf)]                           # nothing rebuilt, nothing else said
    assert elf.stat().st_mtime_ns == before
    assert (elf.parent / "robohal_planar.hex").is_file()


def test_make_harness_prints_its_path_last(firmware_build):
    _, harness = firmware_build
    assert _make("harness") == [str(harness)]
    assert os.access(harness, os.X_OK)


def test_firmware_fits_an_uno(firmware_build):
    elf, _ = firmware_build
    sizes = subprocess.run(["avr-size", "-A", str(elf)], capture_output=True, text=True, timeout=30,
                           check=True).stdout
    section = {parts[0]: int(parts[1]) for parts in (line.split() for line in sizes.splitlines())
               if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit()}
    flash = section[".text"] + section.get(".data", 0)
    ram = section.get(".data", 0) + section.get(".bss", 0)
    assert flash <= 32256                                # boards.txt upload.maximum_size
    assert ram <= 2048 - 512                             # leave at least 512 bytes for the stack


def test_sketch_compiles_without_warnings(firmware_build):
    core = "/usr/share/arduino/hardware/arduino/avr"
    sketch = firmware.sketch_dir() / "robohal_planar.ino"
    proc = subprocess.run(
        ["avr-g++", "-fsyntax-only", "-x", "c++", "-std=gnu++11", "-fpermissive", "-fno-exceptions",
         "-Wall", "-Wextra", "-mmcu=atmega328p",
         "-DF_CPU=16000000L", "-DARDUINO=10807", "-DARDUINO_AVR_UNO", "-DARDUINO_ARCH_AVR",
         f"-I{core}/cores/arduino", f"-I{core}/variants/standard", str(sketch)],
        capture_output=True, text=True, timeout=120, check=False)
    # Only our own files count: the core's headers have warnings of their own.
    ours = [line for line in proc.stderr.splitlines()
            if line.startswith(str(firmware.sketch_dir())) and "warning:" in line]
    assert proc.returncode == 0 and not ours, proc.stderr


def test_build_helpers_return_paths(firmware_build):
    assert firmware.build_firmware() == firmware_build[0]
    assert firmware.build_harness() == firmware_build[1]
    assert Path(firmware_build[0]).parent == firmware.build_dir()


def test_harness_command(firmware_build):
    elf, harness = firmware_build
    assert firmware.harness_command(boot_ms=42, fast=True) == [str(harness), str(elf), "--boot-ms", "42", "--fast", "1",
                                                                "--ideal", "0", "--pulses", "0", "--scheme", "arduino-planar"]
    assert firmware.harness_command(boot_ms=7, servo_speed=2.5, ideal=True, pulses=True) == [
        str(harness), str(elf), "--boot-ms", "7", "--fast", "0", "--servo-speed", "2.5", "--ideal", "1", "--pulses", "1",
        "--scheme", "arduino-planar"]


def test_build_failure_is_reported(monkeypatch, tmp_path):
    (tmp_path / "Makefile").write_text("firmware:\n\t@echo compiling; echo 'error: broken' >&2; exit 1\n"
                                       "harness:\n\t@echo /nonexistent/harness\n")
    monkeypatch.setenv("ROBOHAL_ARDUINO_DIR", str(tmp_path))
    monkeypatch.setenv("ROBOHAL_ARDUINO_BUILD", str(tmp_path / "build"))
    with pytest.raises(RuntimeError, match="error: broken"):
        firmware.build_firmware()
    with pytest.raises(RuntimeError, match="does not exist"):
        firmware.build_harness()


def test_firmware_command_prints_where_everything_is(firmware_build, capsys):
    assert firmware.main([]) == 0
    lines = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines())
    assert Path(lines["elf"].strip()) == firmware_build[0]
    assert Path(lines["hex"].strip()).is_file() and (Path(lines["sketch"].strip()) / "robohal_planar.ino").is_file()
    with pytest.raises(SystemExit):
        firmware.main(["--help"])                    # help, not a build


def test_the_install_hint_names_what_make_avr_deps_installs():
    makefile = Path(firmware.__file__).resolve().parents[4] / "Makefile"
    if not makefile.is_file():
        pytest.skip("installed from a wheel: no repository Makefile")
    line = next(line for line in makefile.read_text().splitlines() if line.startswith("AVR_PACKAGES"))
    assert line.split(":=", 1)[1].split() == firmware.AVR_PACKAGES.split()
