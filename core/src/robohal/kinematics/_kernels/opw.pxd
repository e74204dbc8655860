# The C side of opw.py: libm behind ``math`` and what it takes from common.py.
from libc cimport math
from robohal.kinematics._kernels.common cimport finite_joints, pose_array
