"""Errors the tool reports to users: a message, an exit code, never a traceback."""

from __future__ import annotations


class SiriusError(Exception):
    """A failure the user can act on. ``exit_code`` is what the CLI returns."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ToolchainError(SiriusError):
    """clang-22, the CUDA tree or another tool is missing or unusable."""


class InputError(SiriusError):
    """The input program is missing, malformed, or has nothing to work on."""


class UnsupportedError(SiriusError):
    """The input uses a construct this part of the tool does not handle."""
