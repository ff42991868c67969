"""Rendering of a :class:`ProgramModel` as text (for people) and JSON (for scripts).

Both show the same facts; the JSON has at least the keys ``kernels``,
``launches`` and ``buffers``.
"""

from __future__ import annotations

from typing import Any

from sirius.analysis.evaluate import LoopInfo
from sirius.analysis.host_model import ArgValue, HostStatement
from sirius.analysis.kernel_model import Access, KernelModel
from sirius.analysis.program_model import ProgramModel, launch_count
from sirius.analysis.uar import UAR


def trip_count(loop: LoopInfo) -> int | None:
    """Static trip count of a loop whose domain mentions only its own iterator."""
    import islpy as isl

    if loop.domain is None or not loop.domain.is_affine() or loop.domain.symbols() - {loop.iterator}:
        return None
    s = isl.Set(f"{{ [{loop.iterator}] : {loop.domain.to_isl()} }}")
    if not s.is_bounded():
        return None
    return s.count_val().to_python()


def _access_json(a: Access, kernel: KernelModel) -> dict[str, Any]:
    unit = kernel.buffer_unit(a.buffer)
    index = a.index(unit)
    return {
        "kind": a.kind, "buffer": a.buffer, "space": a.space, "type": a.elem_type, "bytes": a.size,
        "index": None if index is None else str(index), "offset_bytes": None if a.offset is None else str(a.offset),
        "guard": None if a.guard is None else str(a.guard), "loops": list(a.loops), "line": a.line,
        "affine": a.affine, "reason": a.reason or None, "read_only_cache": a.noncoherent,
    }


def _loop_json(lp: LoopInfo) -> dict[str, Any]:
    return {"iterator": lp.iterator, "domain": None if lp.domain is None else str(lp.domain),
            "trip_count": trip_count(lp), "line": lp.line}


def _arg_json(name: str, arg: ArgValue) -> dict[str, Any]:
    out: dict[str, Any] = {"param": name, "kind": arg.kind}
    if arg.kind == "buffer":
        out["buffer"] = arg.buffer
        out["offset_bytes"] = None if arg.offset is None else str(arg.offset)
        c = None if arg.offset is None else arg.offset.constant_value()
        if c is not None:
            out["offset_bytes"] = c
    elif arg.kind == "buffers":
        out["buffers"] = [{"buffer": b, "offset_bytes": None if o is None else str(o)} for b, o in arg.options]
    elif arg.kind == "scalar":
        c = None if arg.value is None else arg.value.constant_value()
        out["value"] = c if c is not None else (str(arg.value) if arg.value is not None else arg.text)
        out["constant"] = c is not None or bool(arg.text)
    return out


def _dim(d) -> list[Any] | None:
    if d is None:
        return None
    c = d.constant()
    return list(c) if c is not None else [None if x is None else str(x) for x in (d.x, d.y, d.z)]


def _statement_json(s: HostStatement) -> dict[str, Any]:
    out: dict[str, Any] = {"index": s.index, "kind": s.kind, "line": s.line, "loops": list(s.loops),
                           "domain": None if s.domain is None else str(s.domain), "call": s.call,
                           "inlined_from": s.inlined_from, "description": s.describe()}
    if s.kind == "copy":
        out.update(direction=s.direction, dst=str(s.dst), src=str(s.src),
                   bytes=None if s.bytes is None else (s.bytes.constant_value() or str(s.bytes)))
    elif s.kind in ("memset", "free"):
        out.update(dst=str(s.dst))
    elif s.kind in ("sync", "alloc"):
        out.update(detail=s.detail)
    elif s.kind == "opaque":  # may read and write all device memory
        out.update(detail=s.detail)
    return out


def model_to_json(model: ProgramModel) -> dict[str, Any]:
    kernels = []
    for k in model.kernels.values():
        kernels.append({
            "name": k.name, "mangled": k.mangled,
            "params": [{"name": p.name, "type": p.type, "pointer": p.is_pointer} for p in k.params],
            "shared": [{"name": s.name, "bytes": s.bytes, "dynamic": s.dynamic} for s in k.shared],
            "barriers": [{"line": b.line, "loops": list(b.loops), "kind": b.kind} for b in k.barriers],
            "early_exits": [{"line": e.line, "condition": e.condition, "divergent": e.divergent,
                             "reaches_barrier": e.reaches_barrier} for e in k.early_exits],
            "loops": [_loop_json(lp) for lp in k.loops],
            "accesses": [_access_json(a, k) for a in k.accesses],
            "warp_ops": [{"op": op, "line": line} for op, line in k.warp_ops],
            "unsupported": list(k.unsupported),
        })
    launches = []
    for inst in model.launches:
        s = inst.statement
        launches.append({
            "index": s.index, "kernel": inst.kernel.name, "line": inst.line,
            "source": inst.site.text if inst.site else None,
            "grid": _dim(s.grid), "block": _dim(s.block),
            "shared_bytes": None if s.shmem is None else (s.shmem.constant_value()
                                                          if s.shmem.constant_value() is not None else str(s.shmem)),
            "stream": s.stream, "loops": list(s.loops), "domain": None if s.domain is None else str(s.domain),
            "args": [_arg_json(n, a) for n, a in inst.bindings],
            "accesses": [{"kind": m.access.kind, "buffer": m.buffer, "map": m.isl, "exact": m.exact}
                         for m in inst.maps],
        })
    buffers = [{"name": a.name, "bytes": None if a.bytes is None else (a.bytes.constant_value()
                                                                        if a.bytes.constant_value() is not None
                                                                        else str(a.bytes)),
                "line": a.line, "allocator": a.function} for a in model.host.allocations]
    buffers += [{"name": name, "bytes": size, "line": None, "allocator": "device global"}
                for name, size in sorted(model.device_globals.items())]
    return {
        "program": model.path,
        "entry": model.host.entry,
        "kernels": kernels,
        "launches": launches,
        "launches_per_run": launch_count(model),
        "launches_counted_per": model.counted_per,
        "buffers": buffers,
        "host_loops": [_loop_json(lp) for lp in model.host.loops],
        "statements": [_statement_json(s) for s in model.host.statements],
        "notes": list(model.notes),
    }


def render_text(model: ProgramModel, data: dict[str, Any] | None = None) -> str:
    """A readable summary: kernels, accesses, launches, buffers, host loops."""
    data = data or model_to_json(model)
    out: list[str] = [f"program {data['program']} (entry {data['entry']})", ""]
    out.append(f"kernels ({len(data['kernels'])})")
    for k in data["kernels"]:
        params = ", ".join(f"{p['type']} {p['name']}" for p in k["params"])
        out.append(f"  kernel {k['name']}({params})")
        for s in k["shared"]:
            size = "dynamic" if s["dynamic"] else f"{s['bytes']} bytes"
            out.append(f"    shared {s['name']}: {size}")
        if k["barriers"]:
            lines = ", ".join(str(b["line"]) for b in k["barriers"] if b["kind"] == "block")
            out.append(f"    barriers: {sum(b['kind'] == 'block' for b in k['barriers'])} (lines {lines})")
        for e in k["early_exits"]:
            out.append(f"    early exit at line {e['line']} when {e['condition']}"
                       + (" (a barrier follows)" if e["reaches_barrier"] else ""))
        for lp in k["loops"]:
            tc = f", {lp['trip_count']} iterations" if lp["trip_count"] is not None else ""
            out.append(f"    loop {lp['iterator']} (line {lp['line']}): {lp['domain']}{tc}")
        for a in k["accesses"]:
            where = a["index"] if a["index"] is not None else (
                f"byte {a['offset_bytes']}" if a["offset_bytes"] is not None else "?")
            guard = f" if {a['guard']}" if a["guard"] else ""
            tag = "" if a["affine"] else f"  [not affine: {a['reason']}; may touch any element]"
            tag += "  [through the read-only data cache]" if a["read_only_cache"] else ""
            out.append(f"    {a['kind']:<6} {a['buffer']}[{where}]{guard}  (line {a['line']}){tag}")
        for w in k["warp_ops"]:
            out.append(f"    warp op {w['op']} (line {w['line']})")
        for u in k["unsupported"]:
            out.append(f"    unsupported: {u}")
    out.append("")
    out.append(f"buffers ({len(data['buffers'])})")
    for b in data["buffers"]:
        out.append(f"  {b['name']}: {b['bytes']} bytes ({b['allocator']}"
                   + (f", line {b['line']})" if b["line"] is not None else ")"))
    enclosing = {name for st in data["statements"] for name in st["loops"]}
    if enclosing:
        out.append("")
        out.append("host loops around device statements")
        for lp in data["host_loops"]:
            if lp["iterator"] not in enclosing:
                continue
            tc = f", {lp['trip_count']} iterations" if lp["trip_count"] is not None else ""
            out.append(f"  {lp['iterator']} (line {lp['line']}): {lp['domain']}{tc}")
    out.append("")
    per_run = data["launches_per_run"]
    out.append(f"launches ({len(data['launches'])} launch statements, "
               f"{per_run if per_run is not None else 'an unknown number of'} launches per "
               f"{data.get('launches_counted_per', 'run')})")
    for l in data["launches"]:
        loops = f" for {l['domain']}" if l["loops"] else ""
        dims = lambda d: "?" if d is None else "[" + ", ".join("?" if x is None else str(x) for x in d) + "]"
        out.append(f"  [{l['index']}] line {l['line']}: {l['kernel']} grid {dims(l['grid'])} block {dims(l['block'])}"
                   f" shared {l['shared_bytes']} stream {l['stream']}{loops}")
        if l["source"]:
            out.append(f"      {l['source']}")
        for a in l["args"]:
            if a["kind"] == "buffer":
                off = a["offset_bytes"]
                desc = a["buffer"] + (f" + {off} bytes" if off not in (0, "0", None) else "")
            elif a["kind"] == "scalar":
                desc = f"= {a['value']}"
            elif a["kind"] == "buffers":
                desc = "one of " + ", ".join(b["buffer"] for b in a["buffers"])
            else:
                desc = "unknown (may alias any buffer)"
            out.append(f"      {a['param']} -> {desc}")
        for m in l["accesses"]:
            out.append(f"      {m['kind']:<6} {m['map']}" + ("" if m["exact"] else "  (over-approximated)"))
    others = [s for s in data["statements"] if s["kind"] != "launch"]
    if others:
        out.append("")
        out.append("other host statements")
        for s in others:
            loops = f" for {s['domain']}" if s["loops"] else ""
            if s["kind"] == "copy":
                what = f"copy {s['direction']} {s['src']} -> {s['dst']} ({s['bytes']} bytes)"
            elif s["kind"] in ("memset", "free"):
                what = f"{s['kind']} {s['dst']}"
            elif s["kind"] == "opaque":
                what = f"{s['description']}: {s['detail']}; may read and write all device memory"
            else:
                what = f"{s['kind']} {s.get('detail', '')}"
            out.append(f"  [{s['index']}] line {s['line']}: {what}{loops}")
    for n in data["notes"]:
        out.append(f"note: {n}")
    return "\n".join(out) + "\n"


def uar_to_json(uar: UAR) -> list[dict[str, Any]]:
    """One entry per UAR edge: ``src``/``dst`` are statement (launch) indices."""
    return [{"src": d.src, "dst": d.dst, "src_kind": uar.graph.nodes[d.src]["kind"],
             "dst_kind": uar.graph.nodes[d.dst]["kind"], "buffer": d.buffer, "kind": d.kind,
             "width": d.width, "width_reindexed": d.width_reindexed, "reindexed": d.reindexed,
             "same_iteration": d.same_iteration, "iteration_width": d.iteration_width,
             "relation": d.relation} for d in uar.dependences]


def virtual_to_json(uar: UAR) -> list[dict[str, Any]]:
    """Per launch: each barrier with the intra-block dependences it orders, and races."""
    out = []
    for stmt, roles in sorted(uar.barriers.items()):
        deps = uar.virtual.get(stmt, [])
        out.append({
            "launch": stmt,
            "barriers": [{"line": r.barrier.line, "needed": r.needed,
                          "orders": [_virtual_json(d) for d in r.orders]} for r in roles],
            "unordered": [_virtual_json(d) for d in deps if d.race],
        })
    return out


def _virtual_json(d) -> dict[str, Any]:
    return {"src_line": d.src.line, "dst_line": d.dst.line, "buffer": d.buffer, "kind": d.kind,
            "carried_by": d.carried_by, "ordered_by": [b.line for b in d.ordered_by]}


def _node_text(uar: UAR, n: int) -> str:
    a = uar.graph.nodes[n]
    where = f" for {a['domain']}" if a["loops"] else ""
    return f"S{n} {a['kind']} {a['label']} (line {a['line']}){where}"


def render_uar(uar: UAR) -> str:
    """The UAR as text: statements, then each dependence with width and relation."""
    out = [f"statements ({uar.graph.number_of_nodes()})"]
    for n in sorted(uar.graph.nodes):
        out.append("  " + _node_text(uar, n))
    out.append("")
    out.append(f"dependences ({len(uar.dependences)})")
    for d in uar.dependences:
        width = ""
        if d.width:
            width = f" width {d.width}"
            if d.width_reindexed:
                width += f" ({d.width_reindexed} after re-indexing the {d.reindexed})"
            if d.same_iteration and d.iteration_width != d.width:
                width += f", {d.iteration_width} within an iteration"
        iters = "" if d.same_iteration else " across host iterations"
        out.append(f"  S{d.src} -> S{d.dst} {d.kind} on {d.buffer}{width}{iters}")
        out.append(f"      {d.relation}")
    if uar.barriers:
        out.append("")
        out.append("barriers as virtual dependences (threads of one block)")
    for stmt, roles in sorted(uar.barriers.items()):
        out.append(f"  S{stmt} {uar.graph.nodes[stmt]['label']}")
        for r in roles:
            state = "needed" if r.needed else ("redundant" if not r.orders else "shared with another barrier")
            out.append(f"    barrier line {r.barrier.line}: orders {len(r.orders)} dependences ({state})")
            for d in r.orders:
                how = f"carried by {d.carried_by}" if d.carried_by else "same iteration"
                out.append(f"      {d.kind} {d.buffer}: line {d.src.line} -> line {d.dst.line}, {how}")
        for d in uar.virtual.get(stmt, []):
            if d.race:
                over = "" if d.src.offset is not None and d.dst.offset is not None else " (over-approximated index)"
                out.append(f"    unordered {d.kind} {d.buffer}: line {d.src.line} -> line {d.dst.line}{over}")
    return "\n".join(out) + "\n"


_DOT_STYLE = {"thread": "solid", "block": "dashed", "global": "bold", None: "dotted"}
_DOT_COLOR = {"flow": "black", "anti": "blue", "output": "red"}


def uar_to_dot(uar: UAR) -> str:
    """Graphviz text: solid = thread, dashed = block, bold = global, dotted = host edge."""
    lines = ["digraph uar {", "  node [shape=box, fontname=monospace];"]
    for n in sorted(uar.graph.nodes):
        a = uar.graph.nodes[n]
        label = f"S{n}: {a['label']}\\n{a['kind']}, line {a['line']}"
        if a["loops"]:
            label += f"\\n{a['domain']}"
        shape = "box" if a["kind"] == "launch" else "ellipse"
        lines.append(f'  S{n} [label="{label}", shape={shape}];')
    for d in uar.dependences:
        label = f"{d.kind} {d.buffer}" + (f" {d.width}" if d.width else "")
        lines.append(f'  S{d.src} -> S{d.dst} [label="{label}", style={_DOT_STYLE[d.width]}, '
                     f'color={_DOT_COLOR[d.kind]}];')
    lines.append("}")
    return "\n".join(lines) + "\n"
