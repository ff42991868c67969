#!/usr/bin/env python3
"""Write seeded random multi-kernel CUDA programs (see sirius.testing.progen).

  gen_random_program.py --seed 7                 # program of seed 7 to stdout
  gen_random_program.py --seed 7 -o p7.cu        # to a file (+ --describe p7.json)
  gen_random_program.py --seed 0 --count 50 --out-dir progs/
                                                 # seeds 0..49 as progs/prog_<seed>.cu,
                                                 # each with progs/prog_<seed>.json
  gen_random_program.py --seed 7 --layouts -o p7.cu
                                                 # laid out as application code is (some
                                                 # programs include a file: written beside)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sirius.testing.progen import generate_program


def write_program(path: Path, prog) -> None:
    """The program at ``path`` (CRLF line ends kept) and the files it includes beside it."""
    path.write_bytes(prog.source.encode())
    for name, text in prog.files:
        (path.parent / name).write_bytes(text.encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True, help="seed (the first one with --count)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the program here (default stdout)")
    parser.add_argument("--describe", metavar="FILE",
                        help="write launches, host statements, device globals and intended dependences as JSON")
    parser.add_argument("--count", type=int, default=1, help="number of consecutive seeds")
    parser.add_argument("--out-dir", metavar="DIR", help="folder for --count programs")
    parser.add_argument("--max-kernels", type=int, default=8, help="most launches per program (default 8)")
    parser.add_argument("--size", type=int, default=4096,
                        help="floats per buffer, a multiple of 256 (default 4096)")
    parser.add_argument("--layouts", action="store_true",
                        help="lay some programs out as application code is (an array of device pointers, kernels "
                             "in an included file, launches in host helpers, CRLF line ends)")
    args = parser.parse_args(argv)

    def write(path: Path, prog) -> None:
        try:
            write_program(path, prog)
        except OSError as err:
            parser.error(f"cannot write {err.filename}: {err.strerror}")

    def make(seed: int):
        try:
            return generate_program(seed, max_kernels=args.max_kernels, size=args.size, layouts=args.layouts)
        except ValueError as err:
            parser.error(str(err))

    if args.count != 1 or args.out_dir:
        if not args.out_dir:
            parser.error("--count needs --out-dir")
        if args.output or args.describe:
            parser.error("-o/--describe write one program; with --out-dir each gets its own files")
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for seed in range(args.seed, args.seed + args.count):
            prog = make(seed)
            write(out / f"prog_{seed}.cu", prog)
            (out / f"prog_{seed}.json").write_text(json.dumps(prog.describe(), indent=1) + "\n")
        print(f"wrote {args.count} programs to {out}", file=sys.stderr)
        return 0

    prog = make(args.seed)
    if args.output:
        write(Path(args.output), prog)
    elif prog.files:
        parser.error(f"the program of seed {args.seed} includes {prog.files[0][0]}: write it with -o, the file "
                     "beside it")
    else:
        sys.stdout.write(prog.source)
    if args.describe:
        Path(args.describe).write_text(json.dumps(prog.describe(), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
