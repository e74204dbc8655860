# The C side of _egm_decode.py (Cython's pure-Python mode reads it beside the .py).
from libc.string cimport memcpy

ctypedef const unsigned char *bytes_pointer

cdef class _Reader:
    cdef object datagram  # keeps buf's memory alive
    cdef bytes_pointer buf
    cdef Py_ssize_t pos
    cdef list q
    cdef object force, rapid
    cdef double pose[14]
    cdef unsigned long long clock[2]
    cdef double value, utilization
    cdef bint has_utilization
    cdef long long seqno, tm, mtype
    cdef int motor, mci, rapid_state, converged

    cdef unsigned long long varint(self, Py_ssize_t end)
    cdef bint double(self, Py_ssize_t end)
    cdef Py_ssize_t length(self, Py_ssize_t end)
    cdef int tag(self, Py_ssize_t end)
    cdef int field(self, Py_ssize_t end, int wire, int highest, int seen)
    cdef bint doubles(self, Py_ssize_t end, int wire, list out)
    cdef bint doubles_only(self, Py_ssize_t end, list out)
    cdef bint flag_and_doubles(self, Py_ssize_t end, list out)
    cdef bint fixed_doubles(self, Py_ssize_t end, int count, int at)
    cdef bint clock_of(self, Py_ssize_t end, bint required, bint keep)
    cdef int state(self, Py_ssize_t end, int codes)
    cdef bint pose_of(self, Py_ssize_t end, int at)
    cdef bint part(self, Py_ssize_t end, int planned)
    cdef bint header(self, Py_ssize_t end)
    cdef bint robot(self, Py_ssize_t end)
    cdef object values(self, Py_ssize_t dof)

cdef bint _bounded(list values)
