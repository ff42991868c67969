"""A small, plain-Python view of LLVM IR read with llvmlite.

llvmlite's reader hands out fresh wrapper objects on every access and leaves
unnamed SSA values (``%5``) without a name, so values are keyed here by the
address of the underlying LLVM object and copied once into frozen-shape
Python objects that later passes can walk cheaply and hash by identity.
Facts llvmlite does not expose (icmp predicates, GEP element types, source
lines) are read from the printed instruction and the module's metadata.
"""

from __future__ import annotations

import ctypes
import math
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import llvmlite.binding as llvm

_DBG_REF = re.compile(r"!dbg !(\d+)")
_LOOP_REF = re.compile(r"!llvm\.loop !(\d+)")
_LOOP_MD = re.compile(r"^!(\d+) = distinct !\{!\1, !(\d+)", re.M)
_DILOCATION = re.compile(r"^!(\d+) = (?:distinct )?!DILocation\(line: (\d+)(?:.*?scope: !(\d+))?(?:.*?inlinedAt: !(\d+))?",
                         re.M)
_DISCOPE = re.compile(r"^!(\d+) = (?:distinct )?!DI(Subprogram|LexicalBlock|LexicalBlockFile)\((?:name: \"([^\"]*)\")?"
                      r"(?:.*?scope: !(\d+))?", re.M)
_SCOPE_FILE = re.compile(r"^!(\d+) = (?:distinct )?!DI(?:Subprogram|LexicalBlock|LexicalBlockFile)\(.*?\bfile: !(\d+)",
                         re.M)
_DIFILE = re.compile(r'^!(\d+) = (?:distinct )?!DIFile\(filename: "([^"]*)", directory: "([^"]*)"', re.M)
_STRUCT_DEF = re.compile(r"^(%[\w.$\"]+) = type (<?\{.*\}>?)\s*$", re.M)


def _address(value) -> int:
    return ctypes.cast(value._ptr, ctypes.c_void_p).value


@dataclass(eq=False)
class Value:
    """Any operand: instruction result, argument, constant, global, block."""

    kind: str  # "inst", "arg", "const", "global", "func", "block", "other"
    type: str
    text: str
    name: str = ""

    def __repr__(self) -> str:  # short and stable for debugging output
        return f"<{self.kind} {self.name or self.text[:40]}>"


@dataclass(eq=False, repr=False)
class Const(Value):
    value: int | float | None = None


@dataclass(eq=False, repr=False)
class Arg(Value):
    index: int = 0
    byval: bool = False  # a pointer to the function's own copy of an argument passed by value (a struct)


@dataclass(eq=False, repr=False)
class Instr(Value):
    opcode: str = ""
    operands: list[Value] = field(default_factory=list)
    incoming: list["Block"] = field(default_factory=list)  # phi only
    block: "Block | None" = None
    line: int | None = None
    loop_line: int | None = None  # on a latch branch: the line where the source loop starts
    inlined_from: str | None = None  # the function, inlined at ``line``, that this instruction comes from
    # where it is written, innermost first: (line, file) of each inlined function's call down to ``line``
    written_at: tuple[tuple[int, str | None], ...] = ()
    written_in: tuple[str, ...] = ()  # the function each of ``written_at`` lies in ("" where unknown)

    @property
    def callee(self) -> str | None:
        """Name of the called function for direct calls (``call`` and ``invoke``)."""
        if self.opcode not in ("call", "invoke") or not self.operands:
            return None
        target = self.operands[-1]
        return target.name if target.kind == "func" else None

    @property
    def call_args(self) -> list[Value]:
        """The arguments of a call or invoke (an invoke's successor blocks left out)."""
        return [op for op in self.operands[:-1] if not isinstance(op, Block)]

    @property
    def predicate(self) -> str | None:
        m = re.search(r"\b[if]cmp (?:samesign )?(\w+)", self.text)
        return m.group(1) if m else None


@dataclass(eq=False)
class Block:
    label: str
    index: int
    instrs: list[Instr] = field(default_factory=list)
    succs: list["Block"] = field(default_factory=list)
    preds: list["Block"] = field(default_factory=list)

    @property
    def terminator(self) -> Instr:
        return self.instrs[-1]

    def __repr__(self) -> str:
        return f"<block {self.label}>"


@dataclass(eq=False)
class Function:
    name: str
    header: str
    args: list[Arg]
    blocks: list[Block]
    is_declaration: bool

    @property
    def is_kernel(self) -> bool:
        return " ptx_kernel " in self.header

    @property
    def entry(self) -> Block:
        return self.blocks[0]

    def instructions(self):
        for block in self.blocks:
            yield from block.instrs


@dataclass
class Module:
    functions: dict[str, Function]
    globals: dict[str, Value]
    struct_types: dict[str, str]
    text: str


class _Converter:
    def __init__(self, text: str):
        self.text = text
        # A location inlined from a header (cudaMalloc<T>, say) is reported at
        # the outermost call site, which is the line the user wrote.
        raw = {int(a): (int(b), int(c) if c else None) for a, b, _, c in _DILOCATION.findall(text)}
        scope_of = {int(a): int(s) for a, _, s, _ in _DILOCATION.findall(text) if s}
        scopes = {int(a): (name, int(parent) if parent else None) for a, kind, name, parent in _DISCOPE.findall(text)}
        files = {int(a): str(Path(d) / f) for a, f, d in _DIFILE.findall(text)}
        file_of = {int(a): files.get(int(f)) for a, f in _SCOPE_FILE.findall(text)}
        self.lines = {}
        self.inlined_from: dict[int, str] = {}  # location -> the function inlined at its outermost call site
        self.written_at: dict[int, tuple[tuple[int, str | None], ...]] = {}  # location -> its chain, innermost first
        self.written_in: dict[int, tuple[str, ...]] = {}  # location -> the function of each link of its chain
        for key in raw:
            line, parent = raw[key]
            seen, current, previous = 0, key, key
            chain = [(line, file_of.get(scope_of.get(key)))]
            functions = [_subprogram(scopes, scope_of.get(key))]
            while parent is not None and parent in raw and seen < 64:
                previous, current = current, parent
                line, parent = raw[current]
                chain.append((line, file_of.get(scope_of.get(current))))
                functions.append(_subprogram(scopes, scope_of.get(current)))
                seen += 1
            self.lines[key] = line
            self.written_at[key] = tuple(chain)
            self.written_in[key] = tuple(functions)
            if seen:  # the outermost inlined location's scope is in the function called at ``line``
                self.inlined_from[key] = _subprogram(scopes, scope_of.get(previous))
        self.text_instructions = _text_instructions(text)
        # loop metadata's first location is where the source loop starts
        self.loop_starts = {int(a): int(b) for a, b in _LOOP_MD.findall(text)}
        self.values: dict[int, Value] = {}
        self.blocks: dict[int, Block] = {}

    def operand(self, op) -> Value:
        key = _address(op)
        known = self.values.get(key)
        if known is not None:
            return known
        kind = op.value_kind.name
        text = str(op).strip() if kind != "basic_block" else ""
        if kind == "argument":
            value = Arg("arg", str(op.type), text, op.name)
        elif kind == "function":
            value = Value("func", "ptr", "", op.name)
        elif kind in ("global_variable", "global_alias"):
            value = Value("global", "ptr", text, op.name)
        elif kind in ("constant_int", "constant_fp"):
            try:
                number = op.get_constant_value()
                width = re.fullmatch(r"i(\d+)", str(op.type))
                if width and int(width.group(1)) > 1 and isinstance(number, int):
                    bits = int(width.group(1))  # llvmlite hands out the unsigned reading
                    if number >= 1 << (bits - 1):
                        number -= 1 << bits
            except Exception:  # a constant llvmlite cannot decode stays opaque
                number = None
            value = Const("const", str(op.type), text, value=number)
        elif kind == "constant_pointer_null":
            value = Const("const", "ptr", text, value=0)
        elif "constant" in kind or kind in ("undef_value", "poison_value"):
            value = Const("const", str(op.type), text, value=None)
        else:
            value = Value("other", str(op.type), text, op.name)
        self.values[key] = value
        return value

    def convert_function(self, fn) -> Function:
        header = str(fn).split("{", 1)[0] if not fn.is_declaration else ""
        header = next((ln for ln in header.splitlines() if ln.startswith(("define", "declare"))), header)
        args = []
        for i, a in enumerate(fn.arguments):
            arg = Arg("arg", str(a.type), "", a.name, index=i,
                      byval=any(attr.startswith(b"byval") for attr in a.attributes))
            self.values[_address(a)] = arg
            args.append(arg)
        func = Function(fn.name, header, args, [], bool(fn.is_declaration))
        if fn.is_declaration:
            return func
        raw_blocks = list(fn.blocks)
        for i, b in enumerate(raw_blocks):
            block = Block(label=f"bb{i}", index=i)
            self.blocks[_address(b)] = block
            func.blocks.append(block)
        # First pass: create instruction objects so forward references resolve.
        raw_instrs = []
        raw = [(ins, block) for b, block in zip(raw_blocks, func.blocks) for ins in b.instructions]
        printed = self.text_instructions.get(fn.name, [])
        if len(printed) != len(raw):  # the text did not split as expected: print each one (slow, exact)
            printed = [_TextInstruction(str(ins).strip(), None, None) for ins, _ in raw]
        for (ins, block), shown in zip(raw, printed):
            ref, loop_ref = shown.dbg, shown.loop
            instr = Instr("inst", str(ins.type), shown.text, ins.name, opcode=ins.opcode, block=block,
                          line=self.lines.get(ref) if ref is not None else None,
                          inlined_from=self.inlined_from.get(ref) if ref is not None else None,
                          written_at=self.written_at.get(ref, ()) if ref is not None else (),
                          written_in=self.written_in.get(ref, ()) if ref is not None else ())
            if loop_ref is not None and loop_ref in self.loop_starts:
                instr.loop_line = self.lines.get(self.loop_starts[loop_ref])
            self.values[_address(ins)] = instr
            block.instrs.append(instr)
            raw_instrs.append((ins, instr))
        for ins, instr in raw_instrs:
            for op in ins.operands:
                if op.value_kind.name == "basic_block":
                    instr.operands.append(self.blocks[_address(op)])  # type: ignore[arg-type]
                else:
                    instr.operands.append(self.operand(op))
            if instr.opcode == "phi":
                instr.incoming = [self.blocks[_address(b)] for b in ins.incoming_blocks]
        for block in func.blocks:
            term = block.terminator
            # br's operands are [cond, false, true]; list successors as printed.
            targets = [op for op in term.operands if isinstance(op, Block)]
            if term.opcode == "br" and len(targets) == 2:
                targets = [targets[1], targets[0]]
            block.succs = targets
            for succ in targets:
                succ.preds.append(block)
        return func


_DEFINE = re.compile(r'^define [^@]*@("(?:[^"]|\\")*"|[\w.$]+)\(')


def _subprogram(scopes: dict[int, tuple[str, int | None]], scope: int | None) -> str:
    """The name of the function a debug scope lies in."""
    for _ in range(64):
        if scope is None or scope not in scopes:
            return ""
        name, parent = scopes[scope]
        if name:
            return name
        scope = parent
    return ""


@dataclass(frozen=True)
class _TextInstruction:
    """One instruction as the module's text prints it: the text, and its ``!dbg`` and
    ``!llvm.loop`` references (module numbering)."""

    text: str
    dbg: int | None
    loop: int | None


_CONTINUATION = ("cleanup", "catch ", "filter ", "to label ")  # a landingpad's clauses, an invoke's targets


def _text_instructions(text: str) -> dict[str, list[_TextInstruction]]:
    """Per defined function, its instructions in order, read from the module's text.

    Read from the text rather than printed by llvmlite one at a time: printing one
    instruction numbers the whole function again (quadratic in a fused kernel of thousands
    of instructions), and numbers metadata on its own. A switch's cases, an invoke's targets
    and a landingpad's clauses continue their instruction on the lines after it; where the
    lines and the instructions do not pair up, ``convert_function`` prints each one.
    """
    current: list[str] | None = None
    in_switch = False
    lines: dict[str, list[str]] = {}
    for line in text.splitlines():
        if current is None:
            m = _DEFINE.match(line)
            if m:
                current = lines.setdefault(m.group(1).strip('"'), [])
            continue
        if line.startswith("}"):
            current = None
            continue
        stripped = line.strip()
        if in_switch:
            current[-1] += " " + stripped
            in_switch = not stripped.startswith("]")
            continue
        if not stripped or stripped.startswith(";") or (not line.startswith(" ") and stripped.endswith(":")) \
                or re.match(r"^[\w.$\"-]+:", line):
            continue
        if stripped.startswith(_CONTINUATION) and current:
            current[-1] += " " + stripped
            continue
        current.append(stripped)
        in_switch = stripped.startswith("switch ") and stripped.endswith("[")
    return {name: [_text_instruction(ins) for ins in instrs] for name, instrs in lines.items()}


def _text_instruction(text: str) -> _TextInstruction:
    dbg, loop = _DBG_REF.search(text), _LOOP_REF.search(text)
    return _TextInstruction(text, int(dbg.group(1)) if dbg else None, int(loop.group(1)) if loop else None)


def parse_module(text: str, roots: Callable[[str], bool] | None = None) -> Module:
    """Parse LLVM IR text into the plain view used by the analyses. With ``roots``, only
    the functions it accepts and those they call (transitively) are converted; the others
    are left out."""
    module = llvm.parse_assembly(text)
    conv = _Converter(text)
    functions = {}
    if roots is None:
        for fn in module.functions:
            functions[fn.name] = conv.convert_function(fn)
    else:
        by_name = {fn.name: fn for fn in module.functions}
        work = [name for name in by_name if roots(name)]
        while work:
            name = work.pop()
            if name in functions or name not in by_name:
                continue
            functions[name] = conv.convert_function(by_name[name])
            work += [i.callee for i in functions[name].instructions() if i.callee]
    globals_ = {}
    for gv in module.global_variables:
        globals_[gv.name] = Value("global", "ptr", str(gv).strip(), gv.name)
        conv.values[_address(gv)] = globals_[gv.name]
    structs = {name.lstrip("%"): body for name, body in _STRUCT_DEF.findall(text)}
    return Module(functions, globals_, structs, text)


def branch_targets(instr: Instr) -> tuple[Value, Block, Block] | None:
    """(condition, true successor, false successor) of a conditional branch."""
    if instr.opcode != "br" or len(instr.operands) != 3:
        return None
    cond, false_bb, true_bb = instr.operands
    return cond, true_bb, false_bb  # type: ignore[return-value]


# ---------------------------------------------------------------- type sizes

_SCALAR_SIZES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "i128": 16, "half": 2,
                 "bfloat": 2, "float": 4, "double": 8, "ptr": 8}


def split_top_level(body: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in body:
        if ch in "[{<(":
            depth += 1
        elif ch in "]}>)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


class TypeLayout:
    """Sizes and field offsets of IR types (natural alignment, as NVPTX and x86-64 use)."""

    def __init__(self, struct_types: dict[str, str]):
        self.structs = struct_types

    def size_align(self, ty: str) -> tuple[int, int] | None:
        ty = ty.strip()
        if ty.startswith("ptr"):
            return 8, 8
        if ty in _SCALAR_SIZES:
            s = _SCALAR_SIZES[ty]
            return s, s
        m = re.fullmatch(r"\[(\d+) x (.+)\]", ty)
        if m:
            inner = self.size_align(m.group(2))
            return None if inner is None else (int(m.group(1)) * inner[0], inner[1])
        m = re.fullmatch(r"<(\d+) x (.+)>", ty)
        if m:
            inner = self.size_align(m.group(2))
            if inner is None:
                return None
            size = int(m.group(1)) * inner[0]
            return size, size
        fields = self.struct_fields(ty)
        if fields is None:
            return None
        offset, align = 0, 1
        for f in fields:
            sa = self.size_align(f)
            if sa is None:
                return None
            fs, fa = sa
            offset = (offset + fa - 1) // fa * fa + fs
            align = max(align, fa)
        return (offset + align - 1) // align * align, align

    def struct_fields(self, ty: str) -> list[str] | None:
        body = self.structs.get(ty.lstrip("%"), ty)
        packed = body.startswith("<{")
        if packed:
            return None  # packed layouts are rare in CUDA; treated as unknown
        if not body.startswith("{"):
            return None
        return split_top_level(body.strip()[1:-1])

    def size(self, ty: str) -> int | None:
        sa = self.size_align(ty)
        return None if sa is None else sa[0]

    def field_offset(self, ty: str, index: int) -> int | None:
        fields = self.struct_fields(ty)
        if fields is None or index >= len(fields):
            return None
        offset = 0
        for i, f in enumerate(fields):
            sa = self.size_align(f)
            if sa is None:
                return None
            offset = (offset + sa[1] - 1) // sa[1] * sa[1]
            if i == index:
                return offset
            offset += sa[0]
        return None


def gep_source_type(instr: Instr) -> str | None:
    """The source element type printed after ``getelementptr [inbounds|nuw…]``."""
    m = re.search(r"getelementptr (?:(?:inbounds|nuw|nusw|inrange\(\S+\))\s+)*(.+?), ptr", instr.text)
    return m.group(1) if m else None


def c_float_literal(llvm_text: str) -> str:
    """A floating-point constant as LLVM prints it (``5.000000e-01``; ``0x3FB99999A0000000``,
    the double of the same value, for one decimal cannot show; ``0xH3C00`` for a half) as a
    C expression of exactly that value (the shortest decimal that reads back as the same
    double; a float's value is a double's, so the conversion to the parameter's type is exact)."""
    text = llvm_text.strip()
    if text.startswith(("0xH", "0xR")):  # half, bfloat16: the bits of the value
        bits = int(text[3:], 16)
        value = struct.unpack("<e", struct.pack("<H", bits))[0] if text[2] == "H" else \
            struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    elif text.startswith("0x") and len(text) == 18:
        value = struct.unpack(">d", bytes.fromhex(text[2:]))[0]
    else:
        try:
            value = float(text)
        except ValueError:
            return text  # an 80- or 128-bit constant: printed as it came, which a compiler rejects
    if math.isnan(value):
        return "__builtin_nan(\"\")"
    if math.isinf(value):
        return "__builtin_huge_val()" if value > 0 else "(-__builtin_huge_val())"
    return f"({value!r})" if value < 0 else repr(value)
