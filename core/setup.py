"""The build's one step beyond pyproject.toml: the optional compiled IK cycle.

Without a C compiler the extension is skipped and robohal runs the same
cycle in pure Python (robohal.kinematics.diffik).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "robohal.kinematics._cycle",
            ["src/robohal/kinematics/_cycle.c"],
            # the same rounding as the Python reference: no fused multiply-adds
            extra_compile_args=["-ffp-contract=off"],
            optional=True,
        )
    ]
)
