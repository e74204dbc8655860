"""The simulated controller's file system, as RWS's file service shows it: ``$HOME`` and ``$TEMP``.

Both live in a temporary folder of the simulator's process (made at start, removed at exit), so a
path from a client can name nothing else: every path is split into its segments, each checked
(no ``..``, ``.``, empty, ``\\``, NUL or control character), joined under its root and checked
again after resolving links. Bounded: how many files and how large each (our choice).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

#: the controller's environment variables a file path may start with (ABB's RWS manual: loadmod
#: ``modulepath=$HOME/mymod.mod``; clients also write ``HOME/...``); matched without case
ROOTS = {"$home": "HOME", "home": "HOME", "$temp": "TEMP", "temp": "TEMP"}
MAX_FILE_SIZE = 4 * 1024 * 1024  # bytes; our choice: a RAPID module is kilobytes, a backup is not simulated
MAX_FILES = 256  # our choice: a bound on what one client can leave behind
MAX_SEGMENT = 128  # characters; our choice (controller file names are short)


class PathRefused(ValueError):
    """A path that names no file this store may touch; ``missing`` when it is well formed but absent."""

    def __init__(self, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


class FileStore:
    """``$HOME`` and ``$TEMP`` in a temporary folder (see the module docstring)."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="robohal-abb-controller-")).resolve()
        for folder in set(ROOTS.values()):
            (self.base / folder).mkdir()

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def resolve(self, path: str) -> Path:
        """The file a controller path names (``$HOME/x.mod``); :class:`PathRefused` for anything else."""
        segments = path.replace("\\", "\x00").split("/")  # a backslash is never a separator here
        if segments and segments[0] == "":
            segments = segments[1:]
        if segments and segments[-1] == "":
            segments = segments[:-1]  # a folder named with a trailing slash
        if not segments or segments[0].lower() not in ROOTS:
            raise PathRefused(f"{path!r} does not start with $HOME or $TEMP", missing=True)
        root = (self.base / ROOTS[segments[0].lower()]).resolve()
        for segment in segments[1:]:
            if segment in ("", ".", "..") or len(segment) > MAX_SEGMENT or \
                    any(ord(char) < 32 or char in "\x00:*?<>|\"" for char in segment):
                raise PathRefused(f"{path!r} is not a file path")
        target = root.joinpath(*segments[1:])
        resolved = target.resolve()
        if resolved != root and root not in resolved.parents:
            raise PathRefused(f"{path!r} leads out of its folder")
        return resolved

    def read(self, path: str) -> bytes:
        target = self.resolve(path)
        if not target.is_file():
            raise PathRefused(f"no file {path!r}", missing=True)
        return target.read_bytes()

    def listing(self, path: str) -> list[tuple[str, bool, int]]:
        """A folder's entries: (name, is a folder, size)."""
        target = self.resolve(path)
        if not target.is_dir():
            raise PathRefused(f"no folder {path!r}", missing=True)
        return sorted((entry.name, entry.is_dir(), entry.stat().st_size if entry.is_file() else 0)
                      for entry in target.iterdir())

    def write(self, path: str, data: bytes) -> bool:
        """Store a file (its folder must exist); True if it is new."""
        target = self.resolve(path)
        if len(data) > MAX_FILE_SIZE:
            raise PathRefused(f"larger than {MAX_FILE_SIZE} bytes")
        if target.is_dir() or not target.parent.is_dir():
            raise PathRefused(f"no folder for {path!r}", missing=True)
        new = not target.exists()
        if new and self.count() >= MAX_FILES:
            raise PathRefused(f"the controller holds {MAX_FILES} files already")
        temporary = target.with_name(target.name + ".part")
        temporary.write_bytes(data)
        os.replace(temporary, target)
        return new

    def delete(self, path: str) -> None:
        target = self.resolve(path)
        if not target.is_file():
            raise PathRefused(f"no file {path!r}", missing=True)
        target.unlink()

    def count(self) -> int:
        return sum(1 for _ in self.base.rglob("*"))
