# The C side of bounds.py: libm behind ``math``.
from libc cimport math
