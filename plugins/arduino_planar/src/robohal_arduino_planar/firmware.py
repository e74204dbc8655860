"""Where the planar-arm firmware lives and how to build it and its simavr harness.

The plugin directory (``plugins/arduino_planar``, holding the Makefile, firmware/ and harness/) is
found relative to this file, or taken from the ``ROBOHAL_ARDUINO_DIR`` environment variable.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

ARDUINO_CORE = Path("/usr/share/arduino/hardware/arduino/avr/cores/arduino")
SIMAVR_HEADER = Path("/usr/include/simavr/sim_avr.h")
INSTALL_HINT = "install the AVR toolchain with `make avr-deps`"
BUILD_TIMEOUT_S = 300


def plugin_dir() -> Path:
    """The plugins/arduino_planar directory."""
    override = os.environ.get("ROBOHAL_ARDUINO_DIR")
    return Path(override).resolve() if override else Path(__file__).resolve().parents[2]


def sketch_dir() -> Path:
    """The Arduino sketch folder (open it in the IDE or pass it to arduino-cli)."""
    return plugin_dir() / "firmware" / "robohal_planar"


def build_dir() -> Path:
    return plugin_dir() / "build"


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


def toolchain_missing() -> str | None:
    """None when the firmware and harness can be built here, else what is missing and how to fix it."""
    missing = []
    for tool in ("make", "avr-gcc", "avr-g++", "avr-gcc-ar", "avr-objcopy", "cc"):
        if shutil.which(tool) is None:
            missing.append(tool)
    if not (ARDUINO_CORE / "Arduino.h").exists():
        missing.append(f"Arduino core ({ARDUINO_CORE})")
    if not SIMAVR_HEADER.exists():
        missing.append(f"simavr headers ({SIMAVR_HEADER})")
    if not _simavr_library_present():
        missing.append("libsimavr")
    if not missing:
        return None
    return f"missing {', '.join(missing)}: {INSTALL_HINT}"


def _make(target: str) -> Path:
    build_dir().mkdir(parents=True, exist_ok=True)
    # Parallel test workers share build/: one make at a time.
    with open(build_dir() / ".make.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(["make", "-s", "-C", str(plugin_dir()), target], capture_output=True,
                              text=True, timeout=BUILD_TIMEOUT_S, check=False)
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


def harness_command(boot_ms: int = 300, realtime: bool = True) -> list[str]:
    """argv that runs the real firmware in simavr on a pty (builds both first if out of date).

    The process prints the pty path as its first stdout line; see PROTOCOL.md for the rest.
    """
    elf = build_firmware()
    harness = build_harness()
    return [str(harness), str(elf), "--boot-ms", str(int(boot_ms)), "--realtime" if realtime else "--fast"]


def emulator_command(boot_ms: int = 300) -> list[str]:
    """argv that runs the Python emulator on a pty, with the same stdout/stdin conventions.

    The child imports this package, so its environment must find it (an installed package does).
    """
    return [sys.executable, "-m", "robohal_arduino_planar.emulator", "--boot-ms", str(int(boot_ms))]
