# Compiled, _kernels.py's ``math`` is the C library's: math.sin(x) on a double is a call to libm's sin,
# as CPython's math.sin is, so both forms round alike.
from libc cimport math
# numpy's C API: the one-pose paths read and make arrays without calls through Python.
cimport numpy as cnp
