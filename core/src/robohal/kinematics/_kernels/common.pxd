# The C side of common.py (Cython's pure-Python mode reads it beside the .py): libm behind
# ``math`` (math.sin(x) on a double is libm's sin, as CPython's math.sin is, so both forms
# round alike), numpy's C API, and what the other kernels cimport.
from libc cimport math
cimport numpy as cnp

cdef bint finite_joints(object q, Py_ssize_t n, double *v) except? -1
cdef object pose_array(double r00, double r01, double r02, double px, double r10, double r11, double r12, double py,
                       double r20, double r21, double r22, double pz)
cdef object new_array(Py_ssize_t rows, Py_ssize_t columns)
cdef double *array_data(object array) except? NULL
cdef int target_rows(object goal, double *t, double *p) except? -1
cdef object frame_error(object goal, object frame, double *target, double *rotation)
cdef int rotation_error(double *t, double *cols, double *out) noexcept nogil
cdef void solve6(double *a, double *b, int k) noexcept nogil
