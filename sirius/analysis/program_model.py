"""Program model: kernels, host statements and launch instances of one program.

Joins the three views of the frontend: device IR (kernel models), host IR
(host model) and the libclang index (names and source ranges). A launch
instance specializes its kernel's accesses with the launch's grid, block
and constant scalar arguments, giving each access as an isl map from
(block, thread, kernel loop) indices to elements of the argument's buffer.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import islpy as isl

from sirius.analysis.evaluate import Formula, conjunction
from sirius.analysis.frontend import CompileJob, compile_program
from sirius.analysis.frontend_cache import cached_frontend
from sirius.analysis.host_model import ArgValue, HostModel, HostStatement, build_host_model
from sirius.analysis.ir import parse_module
from sirius.analysis.kernel_model import (BLOCK_SYMBOLS, THREAD_SYMBOLS, Access, KernelModel, Param,
                                          build_kernel_model, device_globals)
from sirius.analysis.managed_variables import managed_variables
from sirius.analysis.source_index import KernelDecl, LaunchSite, SourceIndex, build_source_index
from sirius.analysis.symbolic import Expr
from sirius.core.errors import InputError


def demangler():
    """A function mapping mangled C++ names to readable ones (identity if no tool)."""
    tool = next((t for t in ("llvm-cxxfilt-22", "llvm-cxxfilt", "c++filt") if shutil.which(t)), None)
    cache: dict[str, str] = {}

    def demangle_all(names: list[str]) -> None:
        todo = [n for n in names if n not in cache]
        if not todo:
            return
        if tool is None:
            cache.update({n: n for n in todo})
            return
        out = subprocess.run([tool], input="\n".join(todo), capture_output=True, text=True).stdout.splitlines()
        cache.update(dict(zip(todo, out if len(out) == len(todo) else todo)))

    def demangle(name: str) -> str:
        demangle_all([name])
        return cache[name]

    demangle.prefetch = demangle_all  # type: ignore[attr-defined]
    return demangle


def _short_name(demangled: str) -> str:
    """``ns::kernel<float>(float*, int)`` -> ``ns::kernel<float>``; a kernel in an anonymous
    namespace keeps ``(anonymous namespace)::`` in its name."""
    depth = 0
    for i, ch in enumerate(demangled):
        if demangled.startswith("(anonymous namespace)", i):
            continue
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return demangled[:i]
    return demangled


@dataclass(frozen=True)
class AccessMap:
    access: Access
    isl: str  # isl map text; every instance of the launch touching the buffer
    buffer: str  # the allocation (or shared array) accessed
    exact: bool  # False when over-approximated
    unit: int = 1  # bytes per element of the map's range (the kernel's smallest access of the buffer)

    def byte_map(self) -> isl.Map:
        """The map with the bytes each instance touches as its range (the access's
        size from its element's start): the footprint the analyses inside a kernel compare
        (barriers, promises, private temporaries), so a 4-byte store and a 1-byte read of
        its last byte meet although their first bytes differ. Between launches the UAR
        builds its own maps (``uar._touch_map``), in elements of the gcd of every access
        size and offset: byte ranges too, in smaller isl sets."""
        m = isl.Map(self.isl)
        name = m.get_tuple_name(isl.dim_type.out)
        size = max(self.access.size, 1)
        if self.unit == 1 and size == 1:
            return m
        widen = isl.Map(f"{{ {name}[e] -> {name}[b] : {self.unit}e <= b < {self.unit}e + {size} }}")
        return m.apply_range(widen)


@dataclass(frozen=True)
class LaunchInstance:
    statement: HostStatement
    kernel: KernelModel
    site: LaunchSite | None
    bindings: tuple[tuple[str, ArgValue], ...]  # param name -> argument
    maps: tuple[AccessMap, ...]
    unplaced: str | None = None  # why it has no site, where more is known than "not found"
    written_line: int | None = None  # the line of the launch expression matched, kept when ``unplaced``
    file: str | None = None  # the file its launch expression is written in, when not the main file

    @property
    def index(self) -> int:
        return self.statement.index

    @property
    def line(self) -> int | None:
        """The line of the main file the launch is written at, for reasons and reports: its
        launch expression's where the source index matched one (in a host function the
        compiler inlined, that is the launch in the function, not the function's call in
        ``main``), else the statement's line."""
        if self.site is not None:
            return self.site.range.line
        return self.written_line if self.written_line is not None else self.statement.line

    @property
    def where(self) -> str:
        """``line 12``, or ``kernels.cu line 5`` for a launch written in another file."""
        return f"{Path(self.file).name} line {self.line}" if self.file else f"line {self.line}"


@dataclass
class ProgramModel:
    path: str
    kernels: dict[str, KernelModel]  # by mangled device name
    host: HostModel
    source: SourceIndex
    launches: list[LaunchInstance] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    device_globals: dict[str, int | None] = field(default_factory=dict)  # __device__/__constant__: name -> bytes
    managed_variables: dict[str, int | None] = field(default_factory=dict)  # those __managed__: name -> line
    kernel_decls: dict[str, KernelDecl] = field(default_factory=dict)  # by mangled device name
    arch: str = "sm_90"  # the GPU architecture the program is compiled for
    # what launch counts are per: "run" (of main), or "call of f" when the model is of the
    # helper f that issues every launch, with how often main runs it where that is known
    counted_per: str = "run"

    def instances(self) -> dict[int, LaunchInstance]:
        """The launch instances by the index of their launch statement."""
        return {i.statement.index: i for i in self.launches}

    def launch(self, index: int) -> LaunchInstance:
        """The launch instance of launch statement ``index`` (KeyError if the program has
        none: a statement that is not a launch, or a launch of no kernel it defines)."""
        cached = self.__dict__.get("_launch_by_index")
        if cached is None or cached[0] is not self.launches or len(cached[1]) != len(self.launches):
            cached = (self.launches, self.instances())
            self.__dict__["_launch_by_index"] = cached
        return cached[1][index]


# ------------------------------------------------------------- isl building

def _affine_part(f: Formula | None) -> Formula | None:
    """Drop non-affine conjuncts (widening); a non-affine disjunction is dropped whole."""
    if f is None:
        return None
    parts = f.parts if f.op == "and" else (f,)
    return conjunction([p for p in parts if p.is_affine()])


def launch_substitution(stmt: HostStatement, kernel: KernelModel, bindings) -> dict[str, Expr]:
    subs: dict[str, Expr] = {}
    for axis, d in zip("xyz", (stmt.block.x, stmt.block.y, stmt.block.z) if stmt.block else (None,) * 3):
        if d is not None:
            subs[f"nt{axis}"] = d
    for axis, d in zip("xyz", (stmt.grid.x, stmt.grid.y, stmt.grid.z) if stmt.grid else (None,) * 3):
        if d is not None:
            subs[f"nb{axis}"] = d
    for name, arg in bindings:
        if arg.kind == "scalar" and arg.value is not None:
            subs[name] = arg.value
    return subs


def _dims_used(stmt: HostStatement, symbols: set[str]) -> list[str]:
    dims = []
    grid = stmt.grid.constant() if stmt.grid else None
    block = stmt.block.constant() if stmt.block else None
    for i, axis in enumerate("xyz"):
        if f"b{axis}" in symbols or (grid is not None and grid[i] > 1) or axis == "x":
            dims.append(f"b{axis}")
    for i, axis in enumerate("xyz"):
        if f"t{axis}" in symbols or (block is not None and block[i] > 1) or axis == "x":
            dims.append(f"t{axis}")
    return dims


def isl_ident(name: str) -> str:
    """``name`` as an isl tuple name: clang names some shared arrays ``x (.0)``, which isl
    cannot read (two names may meet here; that only joins what they touch)."""
    out = re.sub(r"\W", "_", name)
    return out if out and not out[0].isdigit() else f"b_{out}"


def access_map(stmt: HostStatement, kernel: KernelModel, access: Access, subs: dict[str, Expr],
               buffer: str, base_offset: Expr | None, dims: list[str] | None = None) -> AccessMap:
    """The isl map of one access at one launch (see the module docstring).

    The domain lists the block and thread indices the launch uses (or
    ``dims`` when given), then the access's kernel loop iterators.
    """
    unit = kernel.buffer_unit(access.buffer)
    offset = None if access.offset is None else access.offset.subs(subs)
    guard = None if access.guard is None else access.guard.subs(subs)
    exact = access.exact
    if offset is not None and not offset.is_affine():
        offset, exact = None, False
    if offset is not None and any(c % unit for _, c in offset.terms):
        offset, exact = None, False
    aff_guard = _affine_part(guard)
    if guard is not None and (aff_guard is None or str(aff_guard) != str(guard)):
        exact = False
    symbols = set(offset.symbols() if offset is not None else set())
    symbols |= base_offset.symbols() if base_offset is not None else set()
    symbols |= aff_guard.symbols() if aff_guard is not None else set()
    dims = list(dims) if dims is not None else _dims_used(stmt, symbols)
    dims += [lp for lp in access.loops]
    bounds = []
    for d in dims:
        if d in BLOCK_SYMBOLS + THREAD_SYMBOLS:
            extent = subs.get(("nb" if d.startswith("b") else "nt") + d[1])
            if extent is not None and extent.is_affine():
                bounds.append(f"0 <= {d} < {extent}" if extent.constant_value() is not None
                              else f"0 <= {d} and {d} < {extent}")
                symbols |= extent.symbols()  # a grid computed from a host loop's iterator
            else:
                bounds.append(f"0 <= {d}")
    constraints = bounds + ([aff_guard.to_isl()] if aff_guard is not None else [])
    name = isl_ident(buffer)
    if offset is not None:
        out = f"{name}[{offset.floordiv(unit)}]" if base_offset is None else \
            f"{name}[{(offset + base_offset).floordiv(unit)}]"
    else:
        out = f"{name}[o0]"
        exact = False
    params = sorted(symbols - set(dims) - set(access.loops))
    text = (f"[{', '.join(params)}] -> " if params else "") + \
        f"{{ [{', '.join(dims)}] -> {out} : {' and '.join(constraints)} }}"
    return AccessMap(access, text, buffer, exact, unit)


def instance_maps(stmt: HostStatement, kernel: KernelModel, bindings, dims: list[str] | None = None) -> list[AccessMap]:
    """Every access of ``kernel`` at this launch, on the allocations its arguments point into."""
    subs = launch_substitution(stmt, kernel, bindings)
    binding = dict(bindings)
    maps = []
    for a in kernel.accesses:
        arg = binding.get(a.buffer)
        if a.space == "shared" or arg is None or arg.kind != "buffer":
            maps.append(access_map(stmt, kernel, a, subs, a.buffer, None, dims))
            continue
        base = arg.offset if arg.offset is not None and arg.offset.is_affine() else None
        unit = kernel.buffer_unit(a.buffer)
        if base is not None and any(c % unit for _, c in base.terms):
            base = None
        m = access_map(stmt, kernel, a, subs, arg.buffer or a.buffer, base, dims)
        if arg.offset is not None and base is None:
            m = dataclasses.replace(m, exact=False)
        maps.append(m)
    return maps


def _instance(stmt: HostStatement, kernel: KernelModel, site: LaunchSite | None) -> LaunchInstance:
    bindings = tuple((p.name, stmt.args[i] if i < len(stmt.args) else ArgValue("unknown"))
                     for i, p in enumerate(kernel.params))
    return LaunchInstance(stmt, kernel, site, bindings, tuple(instance_maps(stmt, kernel, bindings)))


# ------------------------------------------------------------------ driver

def analyze_program(job: CompileJob, entry: str = "main",
                    kernels: Callable[[str], bool] | None = None) -> ProgramModel:
    """Compile, index and model the program of ``job`` (frontend to launch instances).
    With ``kernels`` (a test of mangled names), only those kernels are modelled, and the
    source index reads declarations only: what the check of an emitted program needs."""
    bodies = kernels is None
    compiled, source = cached_frontend(job, bodies,
                                       lambda: compile_program(job, lambda: build_source_index(job, bodies=bodies)))
    device = parse_module(compiled.device_ir, roots=kernels)
    host = parse_module(compiled.host_ir)
    demangle = demangler()
    demangle.prefetch([f.name for f in device.functions.values()] +  # type: ignore[attr-defined]
                      [f.name for f in host.functions.values()] + list(device.globals))

    # kernels, with parameter names from the source where it declares them
    by_readable: dict[str, str] = {}
    kernels: dict[str, KernelModel] = {}
    kernel_decls: dict[str, KernelDecl] = {}
    decls = {demangle(stub).replace("__device_stub__", "", 1): d for stub, d in source.kernels.items()}
    for fn in device.functions.values():
        if fn.is_declaration or not fn.is_kernel:
            continue
        readable = demangle(fn.name)
        decl = decls.get(readable)
        params = []
        for i, a in enumerate(fn.args):
            if decl is not None and i < len(decl.params) and decl.params[i][0]:
                pname, ptype = decl.params[i]
            else:
                pname, ptype = f"arg{i}", a.type
            params.append(Param(pname, ptype, a.type.startswith("ptr") and not a.byval))
        kernels[fn.name] = build_kernel_model(fn, device, _short_name(readable), params, demangle)
        by_readable[readable] = fn.name
        if decl is not None:
            kernel_decls[fn.name] = decl

    kernels = _with_identifiers(kernels)

    def kernel_of_stub(stub: str) -> str | None:
        return by_readable.get(demangle(stub).replace("__device_stub__", "", 1))

    def alloc_name(line: int | None, ordinal: int) -> str | None:
        sites = [a for a in source.allocations if a.line == line]
        return sites[ordinal].variable if ordinal < len(sites) else None

    entry_ir = _entry_function(host, entry, demangle)
    caller = "main" if entry_ir != "main" and "main" in host.functions and \
        not host.functions["main"].is_declaration else None
    callers: tuple[str, ...] = (caller,) if caller else ()
    globals_ = device_globals(device)
    managed = managed_variables(device)
    build = lambda fn, outer, descend=False: build_host_model(
        host, fn, alloc_name, kernel_of_stub, outer, frozenset(globals_), demangle, frozenset(managed), descend)
    host_model = build(entry_ir, callers)
    chain = [entry_ir]
    entry_runs: int | None = 1
    while not host_model.launches and len(chain) < 4:
        # the entry only calls one helper that launches everything (generated programs
        # do, sometimes through another helper): model that helper, its parameters
        # bound through the chain of calls to the outermost allocations
        if len(host_model.launching_calls) != 1:
            break
        calls = [statement_runs(s) for s in host_model.statements if s.kind == "opaque" and s.launches_kernels]
        entry_runs = None if entry_runs is None or None in calls else entry_runs * sum(calls)
        callers, chain = callers + (chain[-1],), chain + [host_model.launching_calls[0]]
        host_model = build(chain[-1], callers)
    if host_model.launching_calls:
        # helpers launch (main -> run_step -> launch_a, launch_b), besides main's own launches
        # or not: each call of one is modelled where it is made, in program order
        host_model = build(chain[-1], callers, True)
        host_model = dataclasses.replace(host_model, notes=host_model.notes + (
            "launches in " + ", ".join(dict.fromkeys(_short_name(demangle(n)) for s in host_model.launches
                                                     for n in s.through)) + " modelled where they are called",))
    if len(chain) > 1:
        path = " -> ".join(_short_name(demangle(n)) for n in chain)
        host_model = HostModel(host_model.entry, host_model.statements, host_model.allocations, host_model.loops,
                               host_model.notes + (f"entry {path}: the helper that issues every launch",),
                               host_model.launching_calls)
    if not host_model.launches:
        helpers = ", ".join(_short_name(demangle(n)) for n in host_model.launching_calls)
        raise InputError(f"error: {job.path}: no kernel launches found in '{entry}'"
                         + ("; " + "; ".join(host_model.notes) if host_model.notes else "")
                         + (f"; it calls functions that launch kernels ({helpers}): name one with --entry"
                            if helpers else ""))
    model = ProgramModel(str(job.path), kernels, host_model, source, notes=list(host_model.notes),
                         device_globals=globals_, managed_variables=managed, kernel_decls=kernel_decls,
                         arch=job.flags.arch, counted_per=_counted_per(chain, entry_runs, demangle))
    for stmt in host_model.launches:
        kernel = kernels.get(stmt.kernel or "")
        if kernel is None:
            model.notes.append(f"launch at line {stmt.line}: kernel {stmt.kernel} not found in device code")
            continue
        model.launches.append(_instance(stmt, kernel, None))
    called_by = dict(zip(chain, ([caller] if caller else [None]) + chain[:-1]))
    elsewhere = next((why for why in (_runs_elsewhere(compiled.host_ir, host, name, by, demangle)
                                      for name, by in called_by.items() if name != "main") if why), None)
    model.launches = _placed(model.launches, source, host, kernels, job.path, elsewhere, demangle)
    model.launches = _unless_run_elsewhere(model.launches, compiled.host_ir, host, chain[-1], demangle)
    return model


def _runs_elsewhere(host_ir: str, host, name: str, caller: str | None, demangle) -> str | None:
    """Why the host function ``name``, modelled as (part of) the entry with its parameters
    bound over the calls in ``caller``, may also run where the analysis does not follow it
    (None: every call is one of those): a call from another function (itself, a static
    constructor, another helper), or its address taken (a function pointer, an atexit
    handler). Its launches, rewritten in its body, would run fused there too, under facts
    proven for other arguments."""
    calls = [(fn.name, ins) for fn in host.functions.values() if not fn.is_declaration
             for ins in fn.instructions() if ins.callee == name]
    references = len(re.findall(rf"@{re.escape(name)}(?![\w.$])", host_ir)) - 1  # less its definition
    readable = _short_name(demangle(name))
    if references > len(calls):
        return (f"the launches are in {readable}, whose address the program takes: it may run from where the "
                "analysis does not follow")
    others = sorted({_short_name(demangle(fn)) for fn, _ in calls if fn != caller})
    if others:
        uncalled = [fn for fn in sorted({fn for fn, _ in calls if fn != caller})
                    if fn != "main" and not any(ins.callee == fn for f in host.functions.values()
                                                if not f.is_declaration for ins in f.instructions())]
        return (f"the launches are in {readable}, which {', '.join(others)} also call{'' if len(others) > 1 else 's'}"
                + (f" (the analysis follows the calls in {_short_name(demangle(caller))})" if caller else "")
                + (f"; {', '.join(_short_name(demangle(fn)) for fn in uncalled)} is not called here but has external "
                   "linkage: another translation unit may call it (declaring it static says it cannot)"
                   if uncalled else ""))
    return None


def _unless_run_elsewhere(launches: list[LaunchInstance], host_ir: str, host, entry: str,
                          demangle) -> list[LaunchInstance]:
    """The launches modelled in a function at its call site (``through``), unplaced where
    that function, or one it is called through, also runs from where the analysis does not
    follow it: rewritten in its body, they would run fused there too."""
    why: dict[tuple[str, str], str | None] = {}
    out = []
    for inst in launches:
        through = inst.statement.through
        reason = None
        for name, caller in zip(through, (entry,) + through[:-1]):
            if (name, caller) not in why:
                why[(name, caller)] = _runs_elsewhere(host_ir, host, name, caller, demangle)
            reason = reason or why[(name, caller)]
        out.append(dataclasses.replace(inst, site=None, unplaced=reason) if reason and inst.site is not None
                   else inst)
    return out


def _placed(launches: list[LaunchInstance], source: SourceIndex, host, kernels, main_file: Path,
            elsewhere: str | None = None, demangle=lambda name: name) -> list[LaunchInstance]:
    """Each launch with the launch expression it was written as (``site``), or with why it
    has none (``unplaced``). A launch is looked for at its line, then, when the compiler
    inlined the host function it is written in, at the lines of that function where the
    call chain passes (innermost first): a helper's launch is rewritten in the helper, but
    only where that launch expression runs nowhere else (one call site, which the
    analysis followed, and no other copy of it in the program's host code)."""
    spelled_kernels = {_spelled(k.name) for k in kernels.values()}
    # the files whose launches are rewritten (the main file, and those it includes once), by real path
    rewritten = {os.path.realpath(f) for f in (main_file, *source.program_files)}
    sites_by_line: dict[tuple[int, str], list[LaunchSite]] = {}
    for site in source.launches:
        sites_by_line.setdefault((site.range.line, os.path.realpath(site.range.file)), []).append(site)

    taken: dict[tuple, int] = {}  # (calls, line, file, kernel) -> sites of it on that line given out

    def at(line: int | None, file: str | None, kernel: KernelModel, calls: tuple = ()) -> LaunchSite | None:
        where = (line or -1, os.path.realpath(file) if file is not None else os.path.realpath(main_file))
        candidates = sites_by_line.get(where, [])
        same = [s for s in candidates if _spelled(s.kernel) == _spelled(kernel.name)]
        if same:  # two launches of one kernel on one line: the first statement is the first written
            # (counted per call of the helper it is in: each call runs the same launch expressions)
            key = (calls, *where, _spelled(kernel.name))
            k = taken.get(key, 0)
            taken[key] = k + 1
            return same[k] if k < len(same) else None
        if len(candidates) == 1 and _spelled(candidates[0].kernel) not in spelled_kernels:
            return candidates[0]  # written through a name of its own (a macro, a pointer), no other kernel's
        return None

    if elsewhere is not None:  # the launches are modelled in a helper that also runs unfollowed
        return [dataclasses.replace(inst, site=None, unplaced=elsewhere) for inst in launches]
    placed, inner = [], {}
    inner_sites: dict[tuple[int, str, str], LaunchSite] = {}  # (line, file, kernel) -> a helper's launch matched there
    for inst in launches:
        stmt = inst.statement
        if source.renumbered:
            # clang reports the lines #line directives give, the index the file's: the launch
            # written at that line may be another one, and rewriting it would replace the wrong launch
            placed.append(inst)
            continue
        outer_file = stmt.written_at[-1][1] if stmt.written_at else None
        in_program = outer_file is None or os.path.realpath(outer_file) in rewritten
        calls = tuple(zip(stmt.through, stmt.call_lines))  # the calls of helpers it is modelled at
        site = at(stmt.line, outer_file, inst.kernel, calls) if in_program else None
        why = None if in_program else _elsewhere_written(source, stmt, next(
            k for k, (_, file) in enumerate(stmt.written_at)
            if file is not None and os.path.realpath(file) not in rewritten))
        if site is None and in_program and stmt.inlined_from:
            for k, (line, file) in enumerate(stmt.written_at[:-1]):
                if file is not None and os.path.realpath(file) not in rewritten:
                    why = why or _elsewhere_written(source, stmt, k)
                    continue
                # a helper inlined at several calls: its launch, matched for the first, is this one too
                key = (line, os.path.realpath(file or main_file), _spelled(inst.kernel.name))
                site = at(line, file, inst.kernel, calls) or inner_sites.get(key)
                if site is not None:
                    inner_sites[key] = site
                    inner.setdefault(id(site), []).append(len(placed))
                    break
        matched, text_problem = site, site and _unrewritable_text(source, site)
        if text_problem:
            site, why = None, text_problem
        placed.append(dataclasses.replace(
            inst, site=site, unplaced=why if site is None else None,
            written_line=matched.range.line if matched is not None else None,
            file=matched.range.file if matched is not None and matched.range.file != source.main_file else None))
    by_site: dict[int, list[int]] = {}
    for k, inst in enumerate(placed):
        if inst.site is not None:
            by_site.setdefault(id(inst.site), []).append(k)
    copies = _launch_copies(host)
    for members in by_site.values():
        site = placed[members[0]].site
        calls = [placed[k].statement for k in members if placed[k].statement.through]
        if id(site) not in inner and not calls:
            if len(members) > 1:
                why = (f"{len(members)} launches were matched to the one launch expression at line "
                       f"{site.range.line}: which is which is not known")
                for k in members:
                    placed[k] = dataclasses.replace(placed[k], site=None, unplaced=why)
            continue
        # in a helper: the inlined copies of it, or the calls of it modelled where they are
        # made, each run this one launch expression
        runs = copies.get((site.range.line, os.path.realpath(site.range.file)), 0)
        if len(members) > 1 or runs != 1:
            n = max(len(members), runs)
            why = (f"it is written once in {site.function} (line {site.range.line}), which runs it for {n} "
                   "launches in the program" if not calls else
                   f"it is written once in {site.function} (line {site.range.line}), which the program runs from "
                   f"{n} calls{_calls_apart(calls, demangle)}") + ": rewriting it would change them all"
            for k in members:
                placed[k] = dataclasses.replace(placed[k], site=None, unplaced=why)
    return placed


def _calls_apart(calls: list[HostStatement], demangle) -> str:
    """Where statements modelled at the calls of helpers (``through``) part: the helper
    called at several lines that runs them all (`` (step is called at lines 55 and 60)``)."""
    paths = {tuple(zip(s.through, s.call_lines)) for s in calls}
    if len(paths) < 2:
        return ""
    depth = min(len(p) for p in paths)
    for d in range(depth):
        if len({p[d] for p in paths}) > 1:
            names = sorted({_short_name(demangle(p[d][0])) for p in paths})
            lines = sorted({p[d][1] for p in paths if p[d][1] is not None})
            if len(names) == 1 and len(lines) > 1:
                return f" ({names[0]} is called at lines {', '.join(map(str, lines[:-1]))} and {lines[-1]})"
            return ""
    return ""


def _unrewritable_text(source: SourceIndex, site: LaunchSite) -> str | None:
    """Why the launch expression as written cannot be rewritten where it stands (its
    arguments evaluated into temporaries on its first line): a preprocessor directive
    inside it (the branch taken in this build would be the only one left), or ``__LINE__``
    (directly or through a macro) in one spanning lines, whose value would change."""
    if site.directive_line is not None:
        return f"its launch expression holds a preprocessor directive (line {site.directive_line})"
    names = set(re.findall(r"\w+", site.text)) | {n for m in source.macros_in([site.range], objects_only=False)
                                                    for n in source.macros.get(m, ())}
    names |= source.position_builtins.get(site.range.file, frozenset())  # (through a default argument)
    placed = names & {"__builtin_COLUMN", "source_location"}
    if placed:  # (the temporaries stand at other columns)
        return f"its launch expression uses {sorted(placed)[0]}, whose value rewriting it would change"
    if site.range.end_line != site.range.line and names & {"__LINE__", "__builtin_LINE"}:
        return (f"its launch expression spans lines and uses {sorted(names & {'__LINE__', '__builtin_LINE'})[0]}, "
                "whose value rewriting it would change")
    return None


def _elsewhere_written(source: SourceIndex, stmt: HostStatement, k: int) -> str:
    """Why a launch written outside the files rewritten (link ``k`` of its chain, innermost
    first) is not rewritten: the file, the line there, the function it is written in, and
    what keeps that file from being rewritten."""
    line, file = stmt.written_at[k]
    function = stmt.written_in[k] if k < len(stmt.written_in) else ""
    why = next((w for f, w in source.not_rewritten.items() if os.path.realpath(f) == os.path.realpath(file)),
               "which the main file does not include")
    return (f"it is written in {Path(file).name} at line {line}" + (f" (in {function})" if function else "")
            + f", {why}: launches are rewritten in the main file and in the files it includes once, at file scope")


def _launch_copies(host) -> dict[tuple[int, str], int]:
    """How many launch calls in the program's host code each (line, file) is written at,
    through any chain of inlined calls (a helper inlined into two callers is two)."""
    counts: dict[tuple[int, str], int] = {}
    for fn in host.functions.values():
        if fn.is_declaration:
            continue
        for ins in fn.instructions():
            callee = ins.callee or ""
            if "__device_stub__" in callee or callee in ("cudaLaunchKernel", "cudaLaunchCooperativeKernel"):
                for line, file in dict.fromkeys(ins.written_at):
                    if file is not None:
                        key = (line, os.path.realpath(file))
                        counts[key] = counts.get(key, 0) + 1
    return counts


def _spelled(name: str) -> str:
    """A kernel's name as a launch spells it: ``void ns::scale<int>(float*)`` -> ``scale``."""
    return name.split("<")[0].split("(")[0].split(" ")[-1].split("::")[-1]


def _with_identifiers(kernels: dict[str, KernelModel]) -> dict[str, KernelModel]:
    """Give each kernel a C identifier from its name; kernels whose names read alike
    (overloads, template instances) are told apart by a number in program order."""
    def spelled(name: str) -> str:  # "void scale<unsigned int>" -> "scale_unsigned_int"
        head, angle, tail = name.replace("(anonymous namespace)::", "").partition("<")
        return re.sub(r"\W+", "_", head.split(" ")[-1] + angle + tail).strip("_") or "kernel"

    base = {m: spelled(k.name) for m, k in kernels.items()}
    seen: dict[str, int] = {}
    out = {}
    for mangled, k in kernels.items():
        n = seen.get(base[mangled], 0)
        seen[base[mangled]] = n + 1
        out[mangled] = dataclasses.replace(k, ident=base[mangled] if n == 0 else f"{base[mangled]}_{n}")
    return out


def _entry_function(host, entry: str, demangle) -> str:
    """The IR name of the entry: as given, or the function whose source name it is."""
    if entry in host.functions:
        return entry
    matches = [name for name, f in host.functions.items() if not f.is_declaration
               and _short_name(demangle(name)).split("::")[-1] == entry]
    return matches[0] if len(matches) == 1 else entry


def host_domain(stmt: HostStatement):
    """The statement's instances in its host loop nest, as an isl set over its iterators
    (None when it is in no loop or its domain is not affine)."""
    import islpy as isl

    if not stmt.loops or stmt.domain is None or not stmt.domain.is_affine():
        return None
    return isl.Set(f"{{ [{', '.join(stmt.loops)}] : {stmt.domain.to_isl()} }}")


def statement_runs(stmt: HostStatement) -> int | None:
    """How often the statement runs in one run of the program (None: unbounded or unknown)."""
    if not stmt.loops:
        return 1
    dom = host_domain(stmt)
    return dom.count_val().to_python() if dom is not None and dom.is_bounded() else None


def launch_count(model: ProgramModel) -> int | None:
    """Launches in one run of the modelled entry (host loop domains counted: see
    ``ProgramModel.counted_per``), if all are bounded."""
    runs = [statement_runs(inst.statement) for inst in model.launches]
    return None if any(r is None for r in runs) else sum(runs)


def _counted_per(chain: list[str], entry_runs: int | None, demangle) -> str:
    """What launch counts are per: a run of main, or a call of the helper that issues
    every launch (and how often main makes it, when its loops say)."""
    if len(chain) < 2:
        return "run"
    helper = _short_name(demangle(chain[-1]))
    times = "" if entry_runs == 1 else (f"; a run makes {entry_runs} of them" if entry_runs is not None
                                        else "; how many a run makes is not known")
    return f"call of {helper}{times}"
