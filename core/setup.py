"""The build's one step beyond pyproject.toml: the optional compiled kinematics kernels.

Without a C compiler the extension is skipped and robohal runs the same code in
pure Python (the references in robohal.kinematics.diffik, chain and opw).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "robohal.kinematics._kernels",
            ["src/robohal/kinematics/_kernels.c"],
            # the same rounding as the Python reference: no fused multiply-adds
            extra_compile_args=["-ffp-contract=off"],
            optional=True,
        )
    ]
)
