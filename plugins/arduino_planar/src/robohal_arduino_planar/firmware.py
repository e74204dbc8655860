"""Where the planar-arm firmware lives and how to build it and its simavr harness.

The sources (the sketch, the simavr harness and their Makefile) ship inside this package, in
``avr/``; ``ROBOHAL_ARDUINO_DIR`` points elsewhere. Builds go to a cache directory of their own
(``ROBOHAL_ARDUINO_BUILD`` overrides it), since an installed package's directory may be read-only.

``python -m robohal_arduino_planar.firmware`` builds the firmware and prints the sketch folder
(for the Arduino IDE), the .hex (for avrdude) and the .elf.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ARDUINO_CORE = Path("/usr/share/arduino/hardware/arduino/avr/cores/arduino")
SIMAVR_HEADER = Path("/usr/include/simavr/sim_avr.h")
#: the Debian/Ubuntu packages the firmware build and the simavr harness need
AVR_PACKAGES = "gcc-avr avr-libc binutils-avr simavr libsimavr-dev libsimavrparts1 arduino-core-avr"
INSTALL_HINT = f"install the AVR toolchain: `apt install {AVR_PACKAGES}` (`make avr-deps` in a robohal checkout)"
BUILD_TIMEOUT_S = 300


def source_dir() -> Path:
    """The directory holding the Makefile, the sketch folder and the simavr harness."""
    override = os.environ.get("ROBOHAL_ARDUINO_DIR")
    return Path(override).resolve() if override else Path(__file__).resolve().parent / "avr"


def sketch_dir() -> Path:
    """The Arduino sketch folder (open it in the IDE or pass it to arduino-cli)."""
    return source_dir() / "robohal_planar"


def build_dir() -> Path:
    """Where the firmware and the harness are built: one cache directory per source directory."""
    override = os.environ.get("ROBOHAL_ARDUINO_BUILD")
    if override:
        return Path(override).resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(str(source_dir()).encode()).hexdigest()[:12]
    return cache / "robohal" / f"arduino-planar-{key}"


def _simavr_library_present() -> bool:
    # The linker's view is what matters; asking the C compiler avoids guessing multiarch paths.
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return False
    try:
        out = subprocess.run([cc, "-print-file-name=libsimavr.so"], capture_output=True, text=True,
                             timeout=30, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return False
    return os.path.isabs(out) and os.path.exists(out)


def toolchain_missing(simulation: bool = True) -> str | None:
    """None when the firmware (and, with ``simulation``, the simavr harness) can be built here,
    else what is missing and how to fix it."""
    tools = ("make", "avr-gcc", "avr-g++", "avr-gcc-ar", "avr-objcopy") + (("cc",) if simulation else ())
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if not (ARDUINO_CORE / "Arduino.h").exists():
        missing.append(f"Arduino core ({ARDUINO_CORE})")
    if simulation and not SIMAVR_HEADER.exists():
        missing.append(f"simavr headers ({SIMAVR_HEADER})")
    if simulation and not _simavr_library_present():
        missing.append("libsimavr")
    if not missing:
        return None
    return f"missing {', '.join(missing)}: {INSTALL_HINT}"


def _make(target: str) -> Path:
    build = build_dir()
    try:
        build.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RuntimeError(f"cannot create the firmware build directory {build} ({exc.strerror}): "
                           "set ROBOHAL_ARDUINO_BUILD to a writable directory") from exc
    # Parallel test workers share the build directory: one make at a time.
    with open(build / ".make.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(["make", "-s", "-C", str(source_dir()), f"BUILD={build}", target],
                              capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"make {target} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    path = Path(lines[-1])
    if not path.is_file():
        raise RuntimeError(f"make {target} reported {path}, which does not exist")
    return path


def build_firmware() -> Path:
    """Builds (if out of date) the firmware ELF and returns its path."""
    return _make("firmware")


def build_harness() -> Path:
    """Builds (if out of date) the simavr harness and returns its path."""
    return _make("harness")


def harness_command(boot_ms: int = 300, fast: bool = False, servo_speed: float | None = None,
                    ideal: bool = False, pulses: bool = False, scheme: str = "arduino-planar") -> list[str]:
    """argv that runs the real firmware in simavr on a pty (builds both first if out of date).

    ``fast`` lets simavr run free instead of in real time; ``servo_speed`` (rad/s) is the servos'
    slew rate (None: the harness's default, the SG90's rating); ``ideal`` makes the horns follow
    each pulse at once; ``pulses`` prints every PULSE and HORN line. The process's first stdout
    line is the ready line ``READY <scheme>://<pty>``; see PROTOCOL.md for the rest.
    """
    elf = build_firmware()
    harness = build_harness()
    speed = [] if servo_speed is None else ["--servo-speed", repr(float(servo_speed))]
    return [str(harness), str(elf), "--boot-ms", str(int(boot_ms)), "--fast", _flag(fast), *speed,
            "--ideal", _flag(ideal), "--pulses", _flag(pulses), "--scheme", scheme]


def _flag(value: bool) -> str:
    return "1" if value else "0"


def main(argv: list[str] | None = None) -> int:
    """Build the firmware; print the sketch folder, the .hex and the .elf (last)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m robohal_arduino_planar.firmware",
        description="Build the planar-arm firmware (if out of date) and print the sketch folder (for the "
                    "Arduino IDE), the .hex (for avrdude) and the .elf. Builds go to "
                    f"{build_dir()} (ROBOHAL_ARDUINO_BUILD overrides).")
    parser.parse_args(argv)
    missing = toolchain_missing(simulation=False)
    if missing:
        print(f"cannot build the firmware: {missing}", file=sys.stderr)
        return 2
    try:
        elf = build_firmware()
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"sketch: {sketch_dir()}")
    print(f"hex:    {elf.with_suffix('.hex')}")
    print(f"elf:    {elf}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
