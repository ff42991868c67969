"""Sirius: a whole-program optimizer for CUDA programs."""

__version__ = "0.1.0"
