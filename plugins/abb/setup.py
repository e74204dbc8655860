"""The build's one step beyond pyproject.toml: the EGM robot message's fast path compiled.

robohal_abb/_egm_decode.py is written in Cython's pure-Python mode. Where a C compiler is
present Cython compiles it; without one the extension is skipped (optional) and the wire
module reads every message through protobuf, as it would anyway (the interpreted form of the
fast path is there for the tests that hold both forms to protobuf's reading).
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [
            Extension(
                "robohal_abb._egm_decode",
                ["src/robohal_abb/_egm_decode.py"],
                # the same rounding as the interpreted source: no fused multiply-adds
                extra_compile_args=["-O2", "-ffp-contract=off"],
                optional=True,
            )
        ],
        build_dir="build/cython",  # the generated C stays out of the source tree
        compiler_directives={"language_level": 3, "cpow": False},
    )
)
