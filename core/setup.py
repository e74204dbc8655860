"""The build's one step beyond pyproject.toml: the kinematics kernels compiled.

The modules of robohal/kinematics/_kernels/ are written in Cython's pure-Python mode. Where a
C compiler is present Cython compiles each; without one the extensions are skipped (optional)
and the interpreter runs the same files. numpy's headers come with numpy, a build requirement.
"""

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

#: the kernels by domain, each one source (robohal/kinematics/_kernels/NAME.py and its .pxd)
KERNELS = ("common", "chains", "opw", "numeric", "cycle", "bounds", "torque")

setup(
    ext_modules=cythonize(
        [
            Extension(
                f"robohal.kinematics._kernels.{name}",
                [f"src/robohal/kinematics/_kernels/{name}.py"],
                include_dirs=[numpy.get_include()],  # numpy's C API (common.pxd)
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                # the same rounding as the interpreted source: no fused multiply-adds (and no
                # -ffast-math); -O3 over -O2: the batch inverse about 5% faster, measured
                extra_compile_args=["-O3", "-ffp-contract=off"],
                optional=True,
            )
            for name in KERNELS
        ],
        build_dir="build/cython",  # the generated C stays out of the source tree
        compiler_directives={"language_level": 3, "cpow": False},
    )
)
