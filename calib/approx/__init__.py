"""Characterisation of the PTX .approx instructions on a Hopper GPU (see calib/approx/README.md)."""
