"""robohal plugin package robohal_abb."""
