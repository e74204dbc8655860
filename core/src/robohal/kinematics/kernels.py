"""Which form of the kinematics kernels runs here, one module per domain.

The modules of :mod:`robohal.kinematics._kernels` are each written once, in Cython's
pure-Python mode: the build compiles them where a C compiler is present, and the
interpreter runs the same files where none is (same results, bit for bit).
``ROBOHAL_PURE_PYTHON=1`` in the environment runs the sources even where the compiled
forms exist: to compare the two, or to step through the kernels in a debugger.

* :data:`chains`: serial chains' frames and Jacobians (DHChain, UrdfChain), one and many
* :data:`opw`: OPW arms' forward and inverse, one pose and many
* :data:`numeric`: the numeric inverse of any serial chain, one pose and many
* :data:`cycle`: the differential-IK cycle (joint box, damped steps, pose error)
* :data:`bounds`: the setpoint guard's pass and the online generator's velocity bounds
* :data:`torque`: the torque laws (impedances, shaping) and the torque guard's pass
* :data:`common`: what they share (arrays, the rotation error, a 6 x 6 solve, pose checks)
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

#: the kernels' modules, each after the ones it imports
DOMAINS = ("common", "chains", "opw", "numeric", "cycle", "bounds", "torque")
#: the folder of their sources
SOURCES = Path(__file__).with_name("_kernels")


def load_source() -> SimpleNamespace:
    """Every kernel module run by the interpreter from its source, never the compiled form:
    one attribute per domain. Each load is new; the sources import one another within it."""
    package_name = f"{__package__}._kernels_source"
    package = ModuleType(package_name)
    package.__path__ = []  # a package whose modules are only the ones put in sys.modules below
    sys.modules[package_name] = package
    loaded = {}
    for name in DOMAINS:
        spec = importlib.util.spec_from_file_location(f"{package_name}.{name}", SOURCES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        setattr(package, name, module)
        loaded[name] = module
    return SimpleNamespace(**loaded, COMPILED=False)


def load_compiled() -> SimpleNamespace:
    """The kernel modules as the build left them: all compiled, or else all run from their
    sources (a compiled module's helpers are C functions an interpreted one cannot call)."""
    try:
        modules = {name: importlib.import_module(f"{__package__}._kernels.{name}") for name in DOMAINS}
    except ImportError:  # one built, one not: the interpreted one found no Python names in the compiled one
        return load_source()
    if not all(module.COMPILED for module in modules.values()):
        return load_source()
    return SimpleNamespace(**modules, COMPILED=True)


def _choose() -> SimpleNamespace:
    if os.environ.get("ROBOHAL_PURE_PYTHON", "").strip() not in ("", "0"):
        return load_source()
    # The compiled extensions where the build made them (they take precedence over the .py files).
    return load_compiled()


_modules = _choose()
common: ModuleType = _modules.common
chains: ModuleType = _modules.chains
opw: ModuleType = _modules.opw
numeric: ModuleType = _modules.numeric
cycle: ModuleType = _modules.cycle
bounds: ModuleType = _modules.bounds
torque: ModuleType = _modules.torque
#: whether the kernels in use are compiled (every one of them)
COMPILED: bool = _modules.COMPILED
