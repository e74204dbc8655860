# The C side of chains.py: libm behind ``math``, what it takes from common.py, and what the
# numeric inverse cimports.
from libc cimport math
from robohal.kinematics._kernels.common cimport array_data, finite_joints, new_array, pose_array

cdef Py_ssize_t product_size(const double[::1] c) except? -1
cdef int product_walk(const double[::1] c, Py_ssize_t dof, double *q, double *frame, double *axes,
                      bint with_axes) noexcept nogil
cdef (double, double, double, double, double, double) product_column(const double[::1] c, Py_ssize_t j,
                                                                      double *frame, double *axes) noexcept nogil
