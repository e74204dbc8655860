"""The kinematics' hot paths by domain, each module one source compiled by Cython where
the build had a C compiler (else interpreted): import them through
:mod:`robohal.kinematics.kernels`, which picks the form."""
