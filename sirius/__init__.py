"""Sirius: a whole-program optimizer for CUDA programs.

The Python API (``sirius.api``): ``sirius.analyze``, ``sirius.optimize`` and
``sirius.verify``, imported on first use so that ``import sirius`` stays light (the GPU
half of the bench imports this package on machines without the analysis' libraries).
"""

__version__ = "0.1.0"

_API = ("analyze", "optimize", "verify", "report_schema")


def __getattr__(name: str):
    if name in _API:
        from sirius import api

        return getattr(api, name)
    raise AttributeError(f"module 'sirius' has no attribute {name!r}")
