"""Command-line entry point: a thin layer over the library.

Each subcommand lives in ``sirius/commands/<name>.py`` and exposes ``HELP``,
``add_arguments(parser)`` and ``execute(args) -> int``. Exit codes: 0 success,
1 a check failed (e.g. ``verify`` found a difference), 2 bad input or toolchain,
3 an internal error (a bug; ``SIRIUS_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from sirius import __version__
from sirius.core.errors import SiriusError

# The subcommands, in the order ``--help`` lists them.
COMMANDS = ("analyze", "optimize", "run", "verify", "check", "bench", "tune", "experiment")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of ``only`` (the one a command line names: the
    other commands' modules, and the optimizer they import, are then not loaded)."""
    parser = argparse.ArgumentParser(
        prog="sirius",
        description="Whole-program optimizer for CUDA programs: analyzes kernel "
        "launches, proves which can be merged, and fuses them.",
        epilog="Exit codes: 0 success, 1 a check failed, 2 bad input or missing toolchain, "
               "3 internal error (set SIRIUS_DEBUG=1 for the traceback).",
    )
    parser.add_argument("--version", action="version", version=f"sirius {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        module = importlib.import_module(f"sirius.commands.{name}")
        p = sub.add_parser(name, help=module.HELP, description=module.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(_execute=module.execute, _parser=p)
    return parser


# nvcc's pass-through options take a value that may itself start with '-'
_PASS_THROUGH = ("-Xcompiler", "-Xptxas", "-Xlinker", "--compiler-options", "--ptxas-options", "--linker-options")


def _normalize(argv: list[str]) -> tuple[list[str], list[str]]:
    """(sirius's own arguments, the program's: what follows the first ``--``), with nvcc's
    ``-Xcompiler VALUE`` joined into one word so that VALUE is not read as an option."""
    if "--" in argv:
        i = argv.index("--")
        argv, program = argv[:i], argv[i + 1:]
    else:
        program = []
    out: list[str] = []
    k = 0
    while k < len(argv):
        if argv[k] in _PASS_THROUGH and k + 1 < len(argv):
            out.append(f"{argv[k]}={argv[k + 1]}")
            k += 2
            continue
        out.append(argv[k])
        k += 1
    return out, program


def main(argv: list[str] | None = None) -> int:
    own, program_args = _normalize(list(sys.argv[1:] if argv is None else argv))
    named = next((word for word in own if not word.startswith("-")), None)
    parser = build_parser(named if named in COMMANDS else None)
    args, unknown = parser.parse_known_args(own)
    if not getattr(args, "_execute", None):
        parser.print_help()
        return 2
    if unknown:  # one line naming them, not the whole usage
        hint = "; arguments for the program go after --" if args.command in ("run", "verify") else ""
        print(f"sirius {args.command}: error: unrecognized arguments: {' '.join(unknown)}{hint} "
              f"(sirius {args.command} --help lists the options)", file=sys.stderr)
        return 2
    args.program_args = program_args
    try:
        return int(args._execute(args) or 0)
    except SiriusError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output went away (| head): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as err:  # a bug of ours: say so plainly, keep the traceback for debugging
        if os.environ.get("SIRIUS_DEBUG"):
            raise
        print(f"internal error: {type(err).__name__}: {err}\n"
              "this is a bug in sirius; run again with SIRIUS_DEBUG=1 for the traceback", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
