"""Helpers for testing Sirius: random CUDA programs with known dependences."""

from sirius.testing.progen import (
    PATTERNS,
    STRUCTURES,
    WIDTHS,
    Dependence,
    GeneratedProgram,
    Launch,
    generate_program,
)

__all__ = [
    "PATTERNS", "STRUCTURES", "WIDTHS", "Dependence", "GeneratedProgram", "Launch",
    "generate_program",
]
