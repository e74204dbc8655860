"""An example robohal plugin: one robot model, registered through an entry point.

This package is the plugin (entry point ``example_kuka`` in the ``robohal`` group, see
pyproject.toml). Its hook returns a record that names the model's factory by a dotted
reference, ``"package.module:attribute"``: robohal imports ``models`` only when the model is
built, so listing plugins stays fast. ``robohal models`` lists ``kuka.kr6_r700_sixx`` once
this distribution is installed, and ``robohal.connect("sim://?model=kuka.kr6_r700_sixx")``
drives it on the built-in simulated backend.
"""

from __future__ import annotations

from robohal import ModelSpec, hookimpl


@hookimpl
def robohal_models():
    return [
        ModelSpec(
            "kuka.kr6_r700_sixx",
            factory="robohal_example_kuka.models:kr6_r700_sixx",
            dof=6,
            description="KUKA KR6 R700 sixx (OPW; example third-party plugin)",
            tags=("industrial", "opw", "example"),
        )
    ]
