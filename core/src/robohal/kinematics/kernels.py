"""Which form of the kinematics kernels runs here.

:mod:`robohal.kinematics._kernels` is written once, in Cython's pure-Python mode: the
build compiles it where a C compiler is present, and the interpreter runs the same file
where none is (same results, bit for bit). ``ROBOHAL_PURE_PYTHON=1`` in the environment
runs the source even where the compiled form exists: to compare the two, or to step
through the kernels in a debugger.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from types import ModuleType

#: the one source of the kernels
SOURCE = Path(__file__).with_name("_kernels.py")


def load_source() -> ModuleType:
    """The kernels run by the interpreter from :data:`SOURCE`, never the compiled form."""
    spec = importlib.util.spec_from_file_location(f"{__package__}._kernels_source", SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _choose() -> ModuleType:
    if os.environ.get("ROBOHAL_PURE_PYTHON", "").strip() not in ("", "0"):
        return load_source()
    # The compiled extension where the build made one (it takes precedence over the .py), else the source.
    return importlib.import_module(f"{__package__}._kernels")


#: the kernels' module in use
module = _choose()
#: whether the kernels in use are compiled
COMPILED: bool = module.COMPILED
