"""The seeded random CUDA program generator (sirius.testing.progen)."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sirius.testing import PATTERNS, STRUCTURES, WIDTHS, generate_program
from sirius.testing import progen as pg

REPO = Path(__file__).resolve().parent.parent
PALETTE_SEEDS = range(50)
COMPILE_SEEDS = range(30)
NVCC_SEEDS = (0, 7, 13, 21)


@functools.lru_cache(maxsize=None)
def _prog(seed: int, **kw):
    """Programs are deterministic, so tests share them."""
    return generate_program(seed, **kw)


def _pairs(prog):
    return {(d.producer, d.consumer): d for d in prog.expected_dependences}


# ---------------------------------------------------------------- determinism


def test_same_seed_gives_identical_program():
    a, b = generate_program(11), generate_program(11)
    assert a.source == b.source
    assert a.launches == b.launches
    assert a.expected_dependences == b.expected_dependences


def test_different_seeds_give_different_programs():
    sources = [_prog(s).source for s in range(30)]
    assert len(set(sources)) == len(sources)


def test_seed_is_written_into_the_source():
    assert "seed 1234" in generate_program(1234).source


# ---------------------------------------------------------------- parameters


def test_launch_count_within_bounds():
    counts = [len(_prog(s).launches) for s in range(40)]
    assert min(counts) >= 2 and max(counts) <= 8
    assert len(set(counts)) >= 4  # not always the same length
    for s in range(20):
        assert 2 <= len(_prog(s, max_kernels=3).launches) <= 3


@pytest.mark.parametrize("size", [0, 100, 1000, -256])
def test_size_must_be_a_multiple_of_256(size):
    with pytest.raises(ValueError):
        generate_program(0, size=size)


def test_max_kernels_below_two_rejected():
    with pytest.raises(ValueError):
        generate_program(0, max_kernels=1)


def test_non_square_size_has_no_2d_templates():
    for s in range(30):
        prog = _prog(s, size=768)  # 3 x 256, not a square
        assert "const int n = 768;" in prog.source
        assert not {l.pattern for l in prog.launches} & {"tile_map", "transpose"}


def test_other_square_size():
    seen = set()
    for s in range(40):
        prog = _prog(s, size=1024)  # 32 x 32
        for l in prog.launches:
            if l.pattern == "transpose":
                assert l.grid == (2, 2, 1) and l.block == (16, 16, 1)
            seen.add(l.pattern)
    assert "transpose" in seen


# ---------------------------------------------------------------- palette


def test_palette_exercised():
    patterns, structures, widths = set(), set(), set()
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        patterns |= {l.pattern for l in prog.launches}
        structures |= {l.structure for l in prog.launches}
        widths |= {d.width for d in prog.expected_dependences}
    assert patterns == set(PATTERNS)
    assert structures == set(STRUCTURES)
    assert widths == set(WIDTHS)


def test_same_code_is_reused_under_one_name():
    reused = 0
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        defs = re.findall(r"__global__ void (\w+)\(", prog.source)
        assert len(defs) == len(set(defs)), "a kernel is defined twice"
        assert tuple(defs) == prog.kernels
        assert {l.kernel for l in prog.launches} == set(defs)
        reused += len(prog.launches) - len(defs)
    assert reused > 20  # ping-pong loops, branches, repeated templates


# ---------------------------------------------------------------- source shape


def test_source_matches_launch_descriptions():
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        src = prog.source
        assert src.startswith("#include <cstdio>\n#include <cuda_runtime.h>\n")
        main = src[src.index("int main()"):]
        calls = re.findall(r"(\w+)<<<(.+?)>>>\((.*?)\);", main)
        assert len(calls) == len(prog.launches)
        for (name, _, args), launch in zip(calls, prog.launches):
            assert name == launch.kernel
            assert tuple(a.strip() for a in args.split(",")) == launch.args
        for launch in prog.launches:
            assert launch.writes, "every launch writes something"
            if launch.loop is not None:
                assert launch.trips >= 2
        # one checksum line per written buffer, each copied back first
        written = sorted({b for l in prog.launches for b in l.writes}, key=lambda b: int(b[1:]))
        assert list(prog.outputs) == written
        assert re.findall(r'printf\("checksum (\w+): %\.6f\\n"', src) == written
        for b in written:
            assert f"cudaMemcpy(h, d_{b}, n * sizeof(float), cudaMemcpyDeviceToHost);" in src


def test_barrier_templates_use_shared_memory_and_barriers():
    for s in range(30):
        prog = _prog(s)
        for l in prog.launches:
            body = _kernel_body(prog.source, l.kernel)
            if l.pattern in ("block_neighbor", "tile_map", "transpose", "block_reduce", "full_reduce"):
                assert "__shared__" in body and "__syncthreads();" in body
            if l.pattern == "tail_return":
                assert "if (i >= n) return;" in body
                assert l.args[-1].startswith("n - ")
            if l.pattern == "atomic_hist":
                assert "atomicAdd(&h[bin], 1.0f);" in body


def _kernel_body(src: str, name: str) -> str:
    start = src.index(f"__global__ void {name}(")
    return src[start: src.index("\n}\n", start)]


def test_tail_count_is_not_a_multiple_of_the_block():
    found = 0
    for s in range(60):
        for l in _prog(s).launches:
            if l.pattern == "tail_return":
                count = 4096 - int(l.args[-1].split("-")[1])
                assert count % l.block[0] != 0
                assert l.grid[0] == -(-count // l.block[0])
                found += 1
    assert found


def test_host_loops():
    kinds = set()
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        for l in prog.launches:
            if l.structure == "loop_swap":
                assert set(l.reads) == set(l.writes) and len(l.reads) == 2
                assert l.args[0].startswith("src") and l.args[1].startswith("dst")
                kinds.add("swap")
            if l.structure.startswith("loop"):
                assert l.loop is not None
                assert f"for (int it = 0; it < {l.trips}; ++it) {{" in prog.source
    assert kinds == {"swap"}


def test_pool_allocation_appears():
    styles = {"d_pool" in _prog(s).source for s in range(30)}
    assert styles == {True, False}


# ---------------------------------------------------------------- dependences


def test_dependence_table_is_complete_and_consistent():
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        deps = _pairs(prog)
        n = len(prog.launches)
        assert len(deps) == len(prog.expected_dependences)
        for i in range(n):
            for j in range(i + 1, n):
                d = deps[(i, j)]
                a, b = prog.launches[i], prog.launches[j]
                shared = (set(a.writes) & (set(b.reads) | set(b.writes))) | (set(a.reads) & set(b.writes))
                if a.loop is not None and a.loop == b.loop:
                    shared |= set(b.writes) & set(a.reads)
                # every template pair touching a common buffer overlaps in elements
                assert (d.width == "none") == (not shared), (s, i, j, d)
                assert set(d.buffers) == shared
                assert d.loop_carried == bool(d.carried_kinds)
                if d.loop_carried:
                    assert a.loop == b.loop is not None
        for (i, j), d in deps.items():
            if i == j:  # self-dependence across iterations of a host loop
                assert prog.launches[i].loop is not None and d.width != "none"


def test_branches_are_independent():
    groups = 0
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        deps = _pairs(prog)
        branch = [l for l in prog.launches if l.structure == "branch"]
        for x in branch:
            for y in branch:
                if x.index < y.index and x.step == y.step:
                    assert deps[(x.index, y.index)].width == "none"
                    assert not set(x.writes) & (set(y.reads) | set(y.writes))
                    assert not set(y.writes) & set(x.reads)
                    if len(x.reads) == 1:  # unary branches share no buffer at all
                        assert not set(x.reads) & set(y.reads)
                    else:  # binary ones share the input, as Q, K and V do
                        assert x.args[0] == y.args[0] and x.args[1] != y.args[1]
                    groups += 1
    assert groups >= 10


def test_pingpong_dependences_are_loop_carried():
    checked = 0
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        deps = _pairs(prog)
        ls = prog.launches
        for a, b in zip(ls, ls[1:]):
            if a.structure == b.structure == "loop_pingpong" and a.loop == b.loop:
                d = deps[(a.index, b.index)]
                assert a.kernel == b.kernel
                assert "raw" in d.kinds and "raw" in d.carried_kinds
                assert d.width != "none"
                checked += 1
    assert checked


def test_accumulation_depends_on_itself_thread_level():
    checked = 0
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        for l in prog.launches:
            if l.pattern == "accumulate":
                d = prog.dependence(l.index, l.index)
                assert d is not None and d.width == "thread" and d.loop_carried
                checked += 1
    assert checked


CTX = pg.Ctx(n=4096, side=64, block=256)


def _map(block=256, op=0):
    return pg.Map(CTX, op, 1, block)


KNOWN_WIDTHS = [
    # (producer, its buffers, consumer, its buffers, width)
    ("map same shape", _map(), ("x", "y"), _map(op=1), ("y", "z"), "thread"),
    ("map other block size", _map(256), ("x", "y"), _map(128), ("y", "z"), "global"),
    ("map, write after write", _map(), ("x", "y"), _map(op=2), ("z", "y"), "thread"),
    ("map, write after read", _map(), ("x", "y"), _map(), ("z", "x"), "thread"),
    ("unrelated buffers", _map(), ("x", "y"), _map(), ("z", "w"), "none"),
    ("read after read only", _map(), ("x", "y"), _map(), ("x", "z"), "none"),
    ("tail after map", _map(), ("x", "y"), pg.Tail(CTX, 0, 256, 37), ("y", "z"), "thread"),
    ("shift crosses blocks", _map(), ("x", "y"), pg.Shift(CTX, 1, 256), ("y", "z"), "global"),
    ("neighbour, reversed load", _map(), ("x", "y"), pg.BlockNeighbor(CTX, 256, True, False), ("y", "z"), "block"),
    ("neighbour, straight load", _map(), ("x", "y"), pg.BlockNeighbor(CTX, 256, False, False), ("y", "z"), "thread"),
    ("neighbour, other block", _map(), ("x", "y"), pg.BlockNeighbor(CTX, 128, True, False), ("y", "z"), "global"),
    ("after reversed store", pg.BlockNeighbor(CTX, 256, False, True), ("x", "y"), _map(), ("y", "z"), "block"),
    ("block reduce, same chunk", _map(), ("x", "y"), pg.BlockReduce(CTX, 256), ("y", "z"), "block"),
    ("block reduce, other chunk", _map(128), ("x", "y"), pg.BlockReduce(CTX, 256), ("y", "z"), "global"),
    ("per-block broadcast", pg.BlockReduce(CTX, 256), ("x", "s"), pg.Broadcast(CTX, 256, True), ("y", "s", "z"), "block"),
    ("first-element broadcast", pg.BlockReduce(CTX, 256), ("x", "s"), pg.Broadcast(CTX, 256, False), ("y", "s", "z"), "global"),
    ("full reduce", _map(), ("x", "y"), pg.FullReduce(CTX, 256, 4096, "n"), ("y", "z"), "global"),
    # the sum lands in y[0], which only thread 0 of the second reduction reads
    ("reduce of a reduction", pg.FullReduce(CTX, 256, 4096, "n"), ("x", "y"),
     pg.FullReduce(CTX, 128, 4096, "n"), ("y", "z"), "thread"),
    ("two-level reduction", pg.BlockReduce(CTX, 256), ("x", "y"),
     pg.FullReduce(CTX, 256, 16, "n / 256"), ("y", "z"), "global"),
    ("1-D producer, 2-D consumer", _map(), ("x", "y"), pg.Transpose(CTX, 16), ("y", "z"), "global"),
    ("tile map then transpose", pg.TileMap(CTX, 16, False), ("x", "y"), pg.Transpose(CTX, 16), ("y", "z"), "thread"),
    ("transpose then tile map", pg.Transpose(CTX, 16), ("x", "y"), pg.TileMap(CTX, 16, False), ("y", "z"), "global"),
    ("transpose twice", pg.Transpose(CTX, 16), ("x", "y"), pg.Transpose(CTX, 16), ("y", "z"), "global"),
    ("tile map, swapped load", pg.TileMap(CTX, 16, False), ("x", "y"), pg.TileMap(CTX, 16, True), ("y", "z"), "block"),
    ("histogram reads element-wise", _map(), ("x", "y"), pg.Hist(CTX, 256, 64), ("y", "h"), "thread"),
    ("read of histogram bins", pg.Hist(CTX, 256, 64), ("x", "h"), _map(), ("h", "z"), "global"),
    ("accumulate after map", _map(), ("x", "y"), pg.Accumulate(CTX, 256, "0.0f"), ("y", "x"), "thread"),
]


@pytest.mark.parametrize("label,prod,pbufs,cons,cbufs,width", KNOWN_WIDTHS, ids=[k[0] for k in KNOWN_WIDTHS])
def test_known_widths(label, prod, pbufs, cons, cbufs, width):
    assert pg.dependence_width(prod, pbufs, cons, cbufs) == width


# ---------------------------------------------------------------- CLI


def _script(*args, cwd=None):
    return subprocess.run([sys.executable, str(REPO / "scripts" / "gen_random_program.py"), *args],
                          capture_output=True, text=True, cwd=cwd)


def test_cli_prints_the_program_of_a_seed(tmp_path):
    out = _script("--seed", "5")
    assert out.returncode == 0, out.stderr
    assert out.stdout == generate_program(5).source
    out = _script("--seed", "5", "-o", str(tmp_path / "p.cu"), "--describe", str(tmp_path / "p.json"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "p.cu").read_text() == generate_program(5).source
    desc = json.loads((tmp_path / "p.json").read_text())
    assert desc["seed"] == 5 and len(desc["launches"]) == len(generate_program(5).launches)


def test_cli_writes_many(tmp_path):
    out = _script("--seed", "3", "--count", "3", "--out-dir", str(tmp_path / "d"))
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [
        "prog_3.cu", "prog_3.json", "prog_4.cu", "prog_4.json", "prog_5.cu", "prog_5.json"]
    assert (tmp_path / "d" / "prog_4.cu").read_text() == generate_program(4).source


def test_cli_rejects_bad_size():
    out = _script("--seed", "1", "--size", "100")
    assert out.returncode == 2 and "multiple of 256" in out.stderr


# ---------------------------------------------------------------- toolchain


def _toolchain():
    from sirius.config import resolve_toolchain
    from sirius.errors import ToolchainError

    try:
        return resolve_toolchain()
    except ToolchainError as err:
        pytest.skip(str(err))


def _run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


@pytest.mark.toolchain
def test_programs_compile_with_clang(tmp_path):
    tc = _toolchain()
    base = [tc.clang, "-x", "cuda", f"--cuda-path={tc.cuda_path}", "--cuda-gpu-arch=sm_90",
            "-Wno-unknown-cuda-version", "-O1", "-S", "-emit-llvm"]
    for d in tc.extra_include_dirs:
        base += ["-isystem", d]
    jobs, progs = [], {}
    for s in COMPILE_SEEDS:
        prog = progs[s] = _prog(s)
        src = tmp_path / f"p{s}.cu"
        src.write_text(prog.source)
        for side in ("device", "host"):
            jobs.append((s, side, base + [f"--cuda-{side}-only", str(src), "-o", str(tmp_path / f"p{s}.{side}.ll")]))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda job: (job[0], job[1], _run(job[2])), jobs))
    for s, side, res in results:
        assert res.returncode == 0, f"seed {s} ({side}):\n{res.stderr}"
        ir = (tmp_path / f"p{s}.{side}.ll").read_text()
        prog = progs[s]
        if side == "device":
            for k in prog.kernels:
                assert re.search(rf"define .*ptx_kernel .*@_Z\d+{k}P", ir), f"seed {s}: no kernel {k}"
            if any(l.pattern in ("block_reduce", "transpose") for l in prog.launches):
                assert "addrspace(3)" in ir
        else:
            # loops with constant trip counts may be unrolled: at least one call per statement
            assert ir.count("call i32 @__cudaPushCallConfiguration") >= len(prog.launches), f"seed {s}"


@pytest.mark.toolchain
def test_programs_compile_with_nvcc(tmp_path):
    tc = _toolchain()
    nvcc = shutil.which("nvcc") or str(Path(tc.cuda_path) / "bin" / "nvcc")
    if not Path(nvcc).is_file():
        pytest.skip("nvcc not found")
    jobs = []
    for s in NVCC_SEEDS:
        src = tmp_path / f"p{s}.cu"
        src.write_text(_prog(s).source)
        jobs.append((s, [nvcc, "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / f"p{s}.o")]))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda job: (job[0], _run(job[1])), jobs))
    for s, res in results:
        assert res.returncode == 0, f"seed {s}:\n{res.stderr}"
        assert (tmp_path / f"p{s}.o").stat().st_size > 0
