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
from sirius.testing.progen.dependences import _dependences
from sirius.testing.progen.statements import _Stmt

REPO = Path(__file__).resolve().parent.parent
PALETTE_SEEDS = range(50)
COMPILE_SEEDS = range(30)
# these seeds together hold every newer construct (see test_cover_seeds_hold_every_construct);
# 27 and 131 came with issue 26's constructs, which changed the programs of 86 and 164
COVER_SEEDS = (5, 19, 27, 86, 131, 142, 164)
NVCC_SEEDS = (0, 7, 13, 21) + COVER_SEEDS
NEW_PATTERNS = PATTERNS[PATTERNS.index("tail_barrier"):]
NEW_STRUCTURES = ("helper", "loop_symbol", "loop_nest")


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


def test_block_size_from_argv_changes_only_the_default_block_launches():
    for seed in range(20):
        plain, argv = generate_program(seed), generate_program(seed, argv_block=True)
        assert argv.launches == plain.launches and argv.expected_dependences == plain.expected_dependences
        block = {l.block[0] for l in plain.launches if l.pattern == "map"}
        if not block:
            assert "threads - 1" not in argv.source
            continue
        block = block.pop()
        header = f"#include <cstdlib>\n\nstatic int threads = {block};\n"
        assert header in argv.source and "<<<(n + threads - 1) / threads, threads>>>" in argv.source
        # with the default value written in, the program is the one without arguments
        back = (argv.source.replace(header, "").replace("  if (argc > 1) threads = atoi(argv[1]);\n", "")
                .replace("int main(int argc, char** argv)", "int main()")
                .replace("<<<(n + threads - 1) / threads, threads>>>", f"<<<{4096 // block}, {block}>>>"))
        assert back == plain.source


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


def _constructs(prog) -> set[str]:
    return ({l.pattern for l in prog.launches} | {l.structure for l in prog.launches}
            | {f for l in prog.launches for f in l.features} | {o.kind for o in prog.host_ops})


def test_palette_exercised():
    patterns, structures, widths, features, host = set(), set(), set(), set(), set()
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        patterns |= {l.pattern for l in prog.launches}
        structures |= {l.structure for l in prog.launches}
        widths |= {d.width for d in prog.expected_dependences}
        features |= {f for l in prog.launches for f in l.features}
        host |= {o.kind for o in prog.host_ops}
    assert patterns == set(PATTERNS)
    assert structures == set(STRUCTURES)
    assert widths == set(WIDTHS)
    assert features == set(pg.FEATURES)
    assert host == set(pg.HOST_OPS)


def test_cover_seeds_hold_every_construct():
    new = set(NEW_PATTERNS) | set(NEW_STRUCTURES) | set(pg.FEATURES) | set(pg.HOST_OPS)
    assert set().union(*(_constructs(_prog(s)) for s in COVER_SEEDS)) >= new


ISSUE_26 = PATTERNS[PATTERNS.index("byte_neighbor"):]


def test_without_hazards_a_seed_gives_the_program_of_older_versions():
    """hazards=False never draws issue 26's constructs, and a program not drawn for them is the
    same either way: seeds kept as regressions keep the program that failed."""
    drawn = 0
    for s in PALETTE_SEEDS:
        plain = generate_program(s, hazards=False)
        assert not {l.pattern for l in plain.launches} & set(ISSUE_26) and not plain.rebuild_defines
        prog = _prog(s)
        if {l.pattern for l in prog.launches} & set(ISSUE_26):
            drawn += 1
        else:
            assert prog.source == plain.source
    assert 8 <= drawn <= 30  # a fair share of the programs hold them, not all


def test_layouts_change_only_how_a_program_is_written():
    """layouts=True draws from a stream of its own: the launches, host statements and
    dependences are those of the seed's program without layouts; without them, the
    program is the one of earlier versions (no layout, no other file)."""
    seen = set()
    for s in PALETTE_SEEDS:
        plain, laid = _prog(s), _prog(s, layouts=True)
        assert plain.layouts == () and plain.files == ()
        assert (laid.launches, laid.host_ops, laid.expected_dependences) == \
            (plain.launches, plain.host_ops, plain.expected_dependences)
        assert laid == generate_program(s, layouts=True)  # deterministic
        seen |= set(laid.layouts)
        if not laid.layouts:
            assert laid.source == plain.source
    assert seen == set(pg.LAYOUTS)


def _main_text(prog) -> str:
    return prog.source.replace("\r\n", "\n")


def test_each_layout_is_what_it_says():
    for s in PALETTE_SEEDS:
        prog = _prog(s, layouts=True)
        text = _main_text(prog)
        main = text[text.index("int main"):]
        texts = [prog.source] + [t for _, t in prog.files]
        assert all(t.count("\n") == t.count("\r\n") or "\r" not in t for t in texts)  # one line end a file
        assert ("crlf" in prog.layouts) == any("\r\n" in t for t in texts)
        if "pointer_array" in prog.layouts:
            nb = len([b for b in prog.buffers if b.startswith("b")])
            assert f"float* d_bufs[{nb}]" in main and "cudaMalloc(&d_bufs[" in main
            assert not re.search(r"\bd_b\d+\b", main), main
        if "included_kernels" in prog.layouts:
            (name, included), = prog.files
            assert f'#include "{name}"' in text and name == f"seed_{s}_kernels.cuh"
            defined = re.findall(r"__global__ void (\w+)\(", included.replace("\r\n", "\n"))
            # the first kernels there, the others here, in the order of the program without layouts
            assert defined and defined + re.findall(r"__global__ void (\w+)\(", text) == list(prog.kernels)
        else:
            assert prog.files == ()
        if "host_helpers" in prog.layouts:
            # helpers that launch only the included file's kernels may be written there
            included = prog.files[0][1].replace("\r\n", "\n") if prog.files else ""
            both = included + text
            helpers = re.findall(r"^(?:static |inline |__attribute__\(\(noinline\)\) )*void (run_part\d+(?:_rest)?)\(",
                                 both, re.M)
            assert "run_part0" in helpers
            for h in helpers:  # each called once, by main or by the helper it continues
                assert len(re.findall(rf"\b{h}\(", both)) == 2, h
            for h in re.findall(r"void (run_part\w*)\(", included):
                launched = set(re.findall(r"(\w+)(?:<[^<>]*>)?<<<", included[included.index(f"void {h}("):]
                                          .split("\n}", 1)[0]))
                assert launched <= set(re.findall(r"__global__ void (\w+)\(", included)), (h, launched)
            calls_in_helpers = sum(both[both.index(f"void {h}("):].split("\n}", 1)[0].count("<<<") for h in helpers)
            first_helper = text.index("void run_part") if "void run_part" in text else text.index("int main")
            assert calls_in_helpers + main.count("<<<") == \
                text.count("<<<") - text[:first_helper].count("<<<") + included.count("<<<")


def test_sub_word_views_of_shared_floats_read_a_neighbours_bytes_after_the_barrier():
    views = set()
    for s in range(200):
        prog = _prog(s)
        for l in prog.launches:
            if l.pattern != "byte_neighbor":
                continue
            body = _kernel_body(prog.source, l.kernel)
            (view,) = l.features
            views.add(view)
            cast = "(const unsigned char*)tile" if view == "char_view" else "(const short*)tile"
            assert "tile[t] = a[i];" in body and cast in body
            assert body.index("__syncthreads();") < body.index(cast)
            assert "(t + 1) %" in body  # the neighbour's float, not the thread's own
    assert views == {"char_view", "short_view"}


def test_promises_sit_in_noinline_helpers():
    vias = set()
    for s in range(200):
        prog = _prog(s)
        for l in prog.launches:
            if l.pattern != "ldg_helper":
                continue
            body = _kernel_body(prog.source, l.kernel)
            assert "__ldg" not in body and "__restrict__" not in body  # only the callee promises
            if "ldg_in_helper" in l.features:
                assert "__device__ __noinline__ float ro_load(const float* p, int i) {\n  return __ldg(p + i);" \
                    in prog.source and "ro_load(a, i)" in body
            else:
                assert "__device__ __noinline__ float ro_half(const float* __restrict__ p, int i)" in prog.source
                assert "ro_half(a, i)" in body
            vias |= set(l.features)
    assert vias == {"ldg_in_helper", "restrict_in_helper"}


def test_large_dynamic_shared_memory_is_opted_in_before_the_first_launch():
    found = 0
    for s in range(200):
        prog = _prog(s)
        big = [l for l in prog.launches if l.pattern == "big_shared"]
        if not big:
            assert "cudaFuncSetAttribute" not in prog.source
            continue
        found += 1
        (size,) = {int(x) for x in re.findall(
            r"cudaFuncSetAttribute\(stage_big, cudaFuncAttributeMaxDynamicSharedMemorySize, (\d+)\);", prog.source)}
        launched = [int(x) for x in re.findall(r"stage_big<<<\d+, \d+, (\d+)>>>", prog.source)]
        assert launched and max(launched) == size and min(launched) > 48 * 1024
        main = prog.source[prog.source.index("int main"):]
        assert main.index("cudaFuncSetAttribute") < main.index("<<<")
        assert "extern __shared__ float stage[];" in _kernel_body(prog.source, "stage_big")
    assert found >= 5


def test_macros_have_defaults_and_a_rebuild_value():
    seen = set()
    for s in range(200):
        prog = _prog(s)
        patterns = {l.pattern for l in prog.launches}
        expected = [m for m, p in (("SHIFT", "macro_shift"), ("GAIN", "float_macro")) if p in patterns]
        assert [d.split("=")[0] for d in prog.rebuild_defines] == expected
        for name in expected:
            default = re.search(rf"#ifndef {name}\n#define {name} (.+)\n#endif", prog.source).group(1)
            assert default in pg.PROGRAM_MACROS[name][0]
            assert f"{name}={pg.PROGRAM_MACROS[name][1]}" in prog.rebuild_defines
            seen.add(name)
        assert set(prog.macro_kernels) == {l.kernel for l in prog.launches
                                           if l.pattern in ("macro_shift", "float_macro")}
        for l in prog.launches:
            if l.pattern == "macro_shift":  # only in the body: the launch does not name it
                assert "(i + SHIFT) % n" in _kernel_body(prog.source, l.kernel) and "SHIFT" not in l.args
            if l.pattern == "float_macro":
                assert "GAIN" in l.args
    assert seen == {"SHIFT", "GAIN"}


def test_a_programs_dependences_do_not_depend_on_the_programs_generated_before():
    # seeds 8 and 14 both launch shift_macro, with SHIFT 1 and 0: one kernel text, two
    # footprints (the access cache once took the second for the first in one process)
    fresh = subprocess.run([sys.executable, "-c", "from sirius.testing import generate_program as g; "
                            "print(repr(g(14).expected_dependences))"],
                           capture_output=True, text=True, check=True, cwd=REPO).stdout.strip()
    generate_program(8)
    assert repr(generate_program(14).expected_dependences) == fresh


def test_old_palette_alone_still_appears():
    # the newer constructs are mixed in, they do not replace the palette
    plain = [s for s in PALETTE_SEEDS if not _constructs(_prog(s)) - set(PATTERNS[:12]) - set(STRUCTURES[:5])]
    assert len(plain) >= 5


def test_same_code_is_reused_under_one_name():
    reused = 0
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        defs = re.findall(r"__global__ void (\w+)\(", prog.source)
        assert tuple(defs) == prog.kernels
        twice = {d for d in defs if defs.count(d) > 1}
        assert twice <= {"ovl"}, "a kernel is defined twice"
        if twice:  # the two overloads differ in their parameters
            sigs = re.findall(r"__global__ void ovl\((.*?)\)", prog.source)
            assert len(sigs) == 2 and sigs[0] != sigs[1]
        assert {l.kernel for l in prog.launches} == set(defs)
        reused += len(prog.launches) - len(set(defs))
    assert reused > 20  # ping-pong loops, branches, repeated templates


# ---------------------------------------------------------------- source shape


def test_source_matches_launch_descriptions():
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        src = prog.source
        assert src.startswith("#include <cstdio>\n#include <cuda_runtime.h>\n")
        main = src[src.index("int main()"):]
        calls = re.findall(r"(\w+)<<<(.+?)>>>\((.*?)\);", main)
        in_main = [l for l in prog.launches if l.structure != "helper"]
        assert len(calls) == len(in_main)
        for (name, _, args), launch in zip(calls, in_main):
            assert name == launch.kernel
            assert tuple(a.strip() for a in args.split(",")) == launch.args
        for launch in prog.launches:
            assert launch.writes, "every launch writes something"
            if launch.loop is not None:
                assert launch.trips >= 2
            if launch.structure == "helper":  # launched by the host helper, called from main
                helper = src[src.index("static void launch_helper("):src.index("int main()")]
                (name, _, args), = re.findall(r"(\w+)<<<(.+?)>>>\((.*?)\);", helper)
                assert name == launch.kernel
                assert tuple(a.strip() for a in args.split(",")) == launch.args
                assert re.search(r"^  launch_helper\(d_b\d+, d_b\d+, n\);$", main, re.M)
        # one checksum line per written buffer or global array, each copied back first
        written = {b for l in prog.launches for b in l.writes} | {b for o in prog.host_ops for b in o.writes}
        written = sorted(b for b in written if b not in ("c0", "gp"))
        written.sort(key=lambda b: (b[0] != "b", int(b[1:])))
        assert list(prog.outputs) == written
        assert re.findall(r'printf\("checksum (\w+): %\.6f\\n"', src) == written
        for b in written:
            if b in prog.symbols:
                assert f"cudaMemcpyFromSymbol(h, {b}, n * sizeof(float));" in src
            else:
                assert f"cudaMemcpy(h, d_{b}, n * sizeof(float), cudaMemcpyDeviceToHost);" in src
        assert set(prog.symbols) <= set(prog.buffers)


def test_barrier_templates_use_shared_memory_and_barriers():
    variants = set()
    for s in range(60):
        prog = _prog(s)
        for l in prog.launches:
            body = _kernel_body(prog.source, l.kernel)
            if l.pattern in ("block_neighbor", "tile_map", "transpose", "block_reduce", "full_reduce",
                             "tail_barrier"):
                assert "__shared__" in body and "__syncthreads" in body
            if l.pattern in ("tail_return", "tail_barrier"):
                assert "if (i >= n) return;" in body
                assert l.args[-1].startswith("n - ")
            if l.pattern == "tail_barrier":  # the return comes before the barrier
                assert body.index("return;") < body.index("__syncthreads")
            if l.pattern == "atomic_hist":
                assert "atomicAdd(&h[bin], 1.0f);" in body
            for f in l.features:
                if f.startswith("syncthreads_"):
                    # the variant replaces a __syncthreads() and its result reaches the output
                    assert f"int bar = __{f}(" in body and "(float)bar" in body
                    variants.add(f)
    assert variants == {"syncthreads_count", "syncthreads_and", "syncthreads_or"}


def test_device_helpers():
    gidx = shared = 0
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        src = prog.source
        assert src.count("__device__ int gidx()") == any("gidx_helper" in l.features for l in prog.launches)
        for l in prog.launches:
            body = _kernel_body(src, l.kernel)
            if "gidx_helper" in l.features:
                assert "int i = gidx();" in body
                gidx += 1
        callers = {l.kernel for l in prog.launches if "shared_helper" in l.features}
        if callers:
            assert src.count("__device__ float block_sum_dev(float v) {") == 1
            assert "  __shared__ float red[512];" in src  # a static __shared__ array inside the helper
            assert len(callers) == 2  # two different kernels share it
            for k in callers:
                assert "block_sum_dev(" in _kernel_body(src, k)
            shared += 1
    assert gidx and shared


def _kernel_body(src: str, name: str) -> str:
    start = src.index(f"__global__ void {name}(")
    return src[start: src.index("\n}\n", start)]


def test_tail_count_is_not_a_multiple_of_the_block():
    found = 0
    for s in range(60):
        for l in _prog(s).launches:
            if l.pattern in ("tail_return", "tail_barrier"):
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
            if l.structure == "loop_nest":
                S, C = l.nest
                assert l.trips == S * C and l.loop is not None
                assert f"for (int s = 0; s < {S}; ++s) {{" in prog.source
                assert f"for (int c = 0; c < {C}; ++c) {{" in prog.source
                kinds.add("nest")
            elif l.structure.startswith("loop"):
                assert l.loop is not None and not l.nest
                assert f"for (int it = 0; it < {l.trips}; ++it) {{" in prog.source
    assert kinds == {"swap", "nest"}


def test_host_statements_between_launches():
    kinds = set()
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        main = prog.source[prog.source.index("int main()"):]
        last = 0
        for o in prog.host_ops:
            # in program order, each followed by a launch; all but the
            # cudaMemcpyToSymbol (which may set gp or c0 up for the first
            # launch, or stand in a host loop) also preceded by one
            assert o.position < len(prog.launches)
            assert o.position > 0 or o.kind == "to_symbol"
            last = main.index(o.text.splitlines()[0], last)
            assert all(b in prog.buffers for b in o.reads + o.writes)
            if o.kind in ("memcpy2d", "memcpy_d2d", "memcpy_async"):
                assert len(o.reads) == len(o.writes) == 1 and o.reads != o.writes
                assert "cudaMemcpyDeviceToDevice" in o.text
            elif o.kind == "readback":
                assert o.reads and not o.writes and "cudaMemcpyDeviceToHost" in o.text
            elif o.kind in ("memset", "helper_upload"):
                assert o.writes and not o.reads
            elif o.kind == "to_symbol":
                assert o.writes in (("c0",), ("gp",)) and "cudaMemcpyToSymbol(" in o.text
            if o.kind == "memcpy_async":
                assert o.text.startswith("cudaMemcpyAsync(") and o.text.endswith(", 0);")
            kinds.add(o.kind)
        readback = any(o.kind == "readback" for o in prog.host_ops)
        assert ('printf("probe checksum: %.6f\\n", probe);' in prog.source) == readback
        assert ("static void upload(" in prog.source) == any(o.kind == "helper_upload" for o in prog.host_ops)
    assert kinds == set(pg.HOST_OPS)


def test_overloaded_kernels_are_both_launched():
    checked = 0
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        ovl = [l for l in prog.launches if l.pattern == "overload"]
        if not ovl:
            continue
        assert len(ovl) == 2 and {l.kernel for l in ovl} == {"ovl"}
        assert sorted(len(l.args) for l in ovl) == [3, 4]  # (a, out, n) and (a, out, c, n)
        checked += 1
    assert checked


def test_device_globals():
    arrays = consts = pointers = 0
    for s in PALETTE_SEEDS:
        prog = _prog(s)
        src = prog.source
        for g in prog.symbols:
            decl = {"c0": "__constant__ float c0;", "gp": "__device__ float* gp;"}.get(
                g, f"__device__ float {g}[4096];")
            assert decl in src
        for l in prog.launches:
            body = _kernel_body(src, l.kernel)
            if l.pattern == "global_array":
                sig = body[body.index("(") + 1: body.index(")")]
                if l.kernel.startswith(("gmap", "gshift")):  # no pointer parameter at all
                    assert sig == "int n" and len(l.args) == 1
                    arrays += 1
                assert any(g in l.reads + l.writes for g in prog.symbols)
            if l.pattern == "const_symbol":
                assert "c0" in l.reads and "+ c0;" in body
            if l.pattern == "global_pointer":
                # gp was last pointed at the buffer this launch writes
                sets = [o for o in prog.host_ops if o.writes == ("gp",) and o.position <= l.index]
                assert sets and sets[-1].text == f"cudaMemcpyToSymbol(gp, &d_{l.writes[0]}, sizeof(float*));"
                assert "gp" in l.reads and len(l.writes) == 1
                pointers += 1
        readers = [l for l in prog.launches if l.pattern == "const_symbol"]
        if readers:
            # c0 is rewritten between (or around, in a host loop) launches reading it
            a, b = readers[0], readers[-1]
            d = prog.dependence(a.index, b.index)
            assert d.host_between and any(prog.host_ops[k].writes == ("c0",) for k in d.host_between)
            consts += 1
    assert arrays and consts and pointers


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
                if "nest_cell" in (a.pattern, b.pattern):
                    # a cell of a loop nest touches a few slots of its buffers:
                    # sharing a buffer does not mean sharing elements, so the
                    # buffer-level rule below cannot judge these pairs
                    assert set(d.buffers) <= shared and (d.width == "none" or d.buffers)
                else:
                    # every template pair touching a common buffer overlaps in elements
                    assert (d.width == "none") == (not shared), (s, i, j, d)
                    assert set(d.buffers) == shared
                assert d.loop_carried == bool(d.carried_kinds)
                if d.loop_carried:
                    assert a.loop == b.loop is not None
                # host statements between the two are listed as ordering points
                assert {o.index for o in prog.host_ops if i < o.position <= j} <= set(d.host_between)
                for k in d.host_between:
                    o = prog.host_ops[k]
                    assert i < o.position <= j or (o.loop is not None and o.loop == a.loop == b.loop)
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


def test_loop_nest_reads_its_anti_diagonal():
    checked = 0
    for s in range(100):
        prog = _prog(s)
        cells = [l for l in prog.launches if l.structure == "loop_nest"]
        if not cells:
            continue
        a, b = cells
        assert a.kernel.startswith("cell_a") and b.kernel.startswith("cell_b")
        assert "const float* dg = d_" in prog.source and "(s * " in prog.source
        # cell (s, c) reads what cell (s - 1, c + 1) wrote: cell_b on itself,
        # and cells (s - 1, c) and (s, c - 1): cell_b -> cell_a, both carried
        self_b = prog.dependence(b.index, b.index)
        assert self_b is not None and "raw" in self_b.carried_kinds
        ab = prog.dependence(a.index, b.index)
        assert "raw" in ab.kinds and "raw" in ab.carried_kinds
        if not b.kernel.endswith("rev"):
            assert self_b.width == "thread"
        checked += 1
    assert checked >= 3


def test_nest_dependences_are_per_iteration():
    # S = C = 2, W = 128: cell_b of (s, c) reads slot (s, c + 2), which only
    # cell (s - 1, c + 1) writes; without that read cell_b does not depend on
    # itself at all (each cell writes a slot of its own, and merging the
    # iterations' footprints would not tell the two cases apart)
    ctx = pg.Ctx(n=4096, side=64, block=128)
    S, C, W, P = 2, 2, 128, 4
    def cell_b(read_d: bool):
        iters = []
        for s in range(S):
            for c in range(C):
                d = (s * P + c + 2) * W if read_d else 3000
                iters.append((c * W, d, ((s + 1) * P + c + 1) * W))
        buffers = ("t", "h", "h") if read_d else ("t", "z", "h")
        return _Stmt(pg.NestCell(ctx, "b", W, 128), buffers, (), "loop_nest", 0, S * C, iters=tuple(iters))
    deps = _dependences([cell_b(True)])
    assert [(d.producer, d.consumer, d.carried_kinds, d.width) for d in deps] == [(0, 0, ("raw",), "thread")]
    assert _dependences([cell_b(False)]) == []


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
    ("tail barrier after map", _map(), ("x", "y"), pg.TailBarrier(CTX, 0, 256, 37, "count"), ("y", "z"), "thread"),
    ("gidx map after map", _map(), ("x", "y"), pg.Map(CTX, 1, 1, 256, gidx=True), ("y", "z"), "thread"),
    ("element-wise overload", _map(), ("x", "y"), pg.Overload(CTX, False, 1), ("y", "z"), "thread"),
    ("reversing overload", _map(), ("x", "y"), pg.Overload(CTX, True, 0), ("y", "z"), "global"),
    ("global array put then map", pg.GlobalArray(CTX, "put", "x", "g0"), ("x", "g0"),
     pg.GlobalArray(CTX, "map", "g0", "g1"), ("g0", "g1"), "thread"),
    ("global array shift", pg.GlobalArray(CTX, "put", "x", "g0"), ("x", "g0"),
     pg.GlobalArray(CTX, "shift", "g0", "g1", k=5), ("g0", "g1"), "global"),
    ("global array in place", pg.GlobalArray(CTX, "map", "g0", "g0"), ("g0", "g0"),
     pg.GlobalArray(CTX, "get", "g0", "out"), ("g0", "y"), "thread"),
    # two launches that only read c0: the rewrite between them is a host statement
    ("constant read twice", pg.ConstMap(CTX, 0), ("x", "c0", "y"), pg.ConstMap(CTX, 1), ("z", "c0", "w"), "none"),
    ("constant reader after map", _map(), ("x", "y"), pg.ConstMap(CTX, 0), ("y", "c0", "z"), "thread"),
    ("write through gp, then map", pg.PtrWrite(CTX, 0), ("x", "gp", "y"), _map(), ("y", "z"), "thread"),
    ("two writes through gp", pg.PtrWrite(CTX, 0), ("x", "gp", "y"), pg.PtrWrite(CTX, 0), ("z", "gp", "w"), "none"),
    ("helper sum after map", _map(), ("x", "y"), pg.HelperReduce(CTX, "sum", 256), ("y", "z"), "thread"),
    ("per-block broadcast of a helper sum", pg.HelperReduce(CTX, "sum", 256), ("x", "s"),
     pg.Broadcast(CTX, 256, True), ("y", "s", "z"), "block"),
    ("helper norm after other block", _map(128), ("x", "y"), pg.HelperReduce(CTX, "norm", 256), ("y", "z"), "global"),
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
    from sirius.core.config import resolve_toolchain
    from sirius.core.errors import ToolchainError

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
                # (a kernel on device globals alone has no pointer parameter)
                assert re.search(rf"define .*ptx_kernel .*@_Z\d+{k}[A-Za-z]", ir), f"seed {s}: no kernel {k}"
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
