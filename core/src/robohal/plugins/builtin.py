"""The core's own plugin: the ``sim`` backend, a generic planar model, the
models of the user's model files (:mod:`.model_files`) and of the arm files (:mod:`.arm_files`).

It implements the same hooks as every other plugin, but needs no entry point:
:func:`~robohal.plugins.registry.plugin_manager` registers it in code, as
``builtin``, in every registry, and it cannot be disabled.
"""

from __future__ import annotations

import numpy as np

from ..kinematics import JointLimits, PlanarTwoLink
from ..sim.backend import SimBackend
from .arm_files import arm_model_specs
from .hookspecs import hookimpl
from .model_files import model_file_specs
from .records import BackendSpec, ModelSpec


def generic_planar2(l1: float = 0.3, l2: float = 0.25) -> PlanarTwoLink:
    limits = JointLimits(
        lower=np.radians([-170.0, -150.0]),
        upper=np.radians([170.0, 150.0]),
        velocity=np.radians([180.0, 180.0]),
        acceleration=np.radians([900.0, 900.0]),
        jerk=np.radians([18000.0, 18000.0]),
    )
    return PlanarTwoLink(l1, l2, limits)


@hookimpl
def robohal_models():
    return [
        ModelSpec(
            "generic.planar2",
            factory=generic_planar2,
            dof=2,
            description="Planar two-link arm, 0.30 m + 0.25 m links (a model for trying things out)",
            tags=("planar", "example"),
        ),
        *model_file_specs(),
        *arm_model_specs(),
    ]


@hookimpl
def robohal_backends():
    return [
        BackendSpec(
            "sim",
            factory=SimBackend,
            description="In-process simulated joint-position robot for any registered model",
            hil_targets=("sim://?model=generic.planar2",),
            features=frozenset({"simulated", "fault-injection"}),
            position_tolerance=1e-3,
            settle_time=0.5,
            params=("rate", "lag", "realtime", "q0"),
        )
    ]
