# The C side of numeric.py: libm behind ``math``, the monotonic clock for the time budget,
# and what it takes from chains.py and common.py.
from libc cimport math
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec
from robohal.kinematics._kernels.chains cimport product_column, product_size, product_walk
from robohal.kinematics._kernels.common cimport rotation_error, solve6
