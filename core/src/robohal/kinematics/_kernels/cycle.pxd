# The C side of cycle.py: libm behind ``math`` and what it takes from common.py.
from libc cimport math
from robohal.kinematics._kernels.common cimport frame_error, rotation_error, solve6, target_rows
