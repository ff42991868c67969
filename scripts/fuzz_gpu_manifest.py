"""Write a bench manifest for the programs a fuzz campaign kept, so that the GPU judges them.

``scripts/fuzz_fusion.py --keep DIR`` leaves ``seed_N.cu`` (the generated program) and
``seed_N_opt.cu`` (what ``sirius optimize`` made of it) in DIR. This script lists every pair
in ``DIR/manifest.json``; then, on a machine with a GPU and nvcc:

    python3 -m sirius.tuning.gpu_bench DIR --verify-only --json results.json

builds both with nvcc and compares their results bit for bit (differences only where nvcc
contracted a multiply and an add are told apart with -fmad=false): the judge that sees what
the CPU backend cannot (restrict and non-coherent loads as nvcc compiles them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sirius.tuning.gpu_bench import BenchProgram, write_manifest  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="the --keep folder of a fuzz campaign")
    args = parser.parse_args()
    folder = Path(args.folder).resolve()
    programs = []
    for original in sorted(folder.glob("seed_*.cu"), key=lambda p: int(re.sub(r"\D", "", p.stem) or 0)):
        if original.stem.endswith("_opt"):
            continue
        optimized = original.with_name(original.stem + "_opt.cu")
        if not optimized.is_file():
            continue
        report = original.with_suffix(".json")
        facts = json.loads(report.read_text()) if report.is_file() else {}
        programs.append(BenchProgram(original.stem, str(original.name), original, optimized,
                                     launches_before=facts.get("launches_before"),
                                     launches_after=facts.get("launches_after")))
    if not programs:
        print(f"error: no seed_N.cu with its seed_N_opt.cu in {folder}", file=sys.stderr)
        return 2
    path = write_manifest(folder, programs, arch="sm_90", std=None,
                          command="python3 scripts/fuzz_gpu_manifest.py " + args.folder)
    print(f"wrote {path} ({len(programs)} programs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
