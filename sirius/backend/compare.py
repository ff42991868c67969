"""Compare two runs of a program: the buffers they copied back and their output.

Both backends dump every device-to-host copy (``cudaMemcpy`` and
``cudaMemcpyAsync`` DeviceToHost, ``cudaMemcpy2D``, ``cudaMemcpyFromSymbol``)
to the file named by ``SIRIUS_DUMP``. A record is, little-endian::

    "SRD1"  u32 sequence  u32 element-code  u32 line
    u32 n + n bytes: the call's argument text   u32 n + n bytes: file
    u32 n + n bytes: the call (cudaMemcpy...)   u64 n + n bytes: the data

The element code comes from the destination pointer's type (see ``ElemCode``
in ``sirius_cpu/api.h``); an unknown type compares as bytes. Managed buffers
(``cudaMallocManaged``), which the host reads without copies, are recorded
when freed or at exit, with the allocation's site; ``__managed__`` variables at
exit, with their name (the call is ``__managed__``).

``compare_runs`` pairs the copies of the two runs by order and compares each
element-wise: bit-exact by default, or within ``atol + rtol * |original|``
(NaN equal to NaN). It also compares the exit statuses and the printed output
(numbers within the same tolerance; lines about timing are ignored, as they
differ from run to run).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from sirius.core.errors import SiriusError

MAGIC = b"SRD1"

# element code -> (name, struct format char, size, kind)
ELEMENTS = {
    0: ("bytes", "B", 1, "bytes"),
    1: ("f32", "f", 4, "float"),
    2: ("f64", "d", 8, "float"),
    3: ("f16", "e", 2, "float"),
    4: ("i8", "b", 1, "int"),
    5: ("u8", "B", 1, "int"),
    6: ("i16", "h", 2, "int"),
    7: ("u16", "H", 2, "int"),
    8: ("i32", "i", 4, "int"),
    9: ("u32", "I", 4, "int"),
    10: ("i64", "q", 8, "int"),
    11: ("u64", "Q", 8, "int"),
    12: ("bf16", "H", 2, "bf16"),
    13: ("bool", "B", 1, "int"),
}
_NUMPY_TYPES = {"f32": "<f4", "f64": "<f8", "f16": "<f2", "i8": "i1", "u8": "u1", "i16": "<i2",
                "u16": "<u2", "i32": "<i4", "u32": "<u4", "i64": "<i8", "u64": "<u8",
                "bool": "u1", "bytes": "u1"}

# Output lines that report timings or rates: not compared.
TIMING_LINE = re.compile(
    r"(?i)\b(?:time|times|timing|elapsed|ms|msec|millisec\w*|us|usec|microsec\w*|ns|sec|secs"
    r"|seconds?|gflops?|tflops?|gflop/s|tflop/s|throughput|bandwidth|gb/s|speedup)\b"
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)",
                     re.IGNORECASE)


@dataclass(frozen=True)
class Copy:
    """One device-to-host copy a run made."""

    seq: int
    elem_code: int
    line: int
    args_text: str
    file: str
    call: str
    data: bytes

    @property
    def element(self) -> str:
        return ELEMENTS.get(self.elem_code, ELEMENTS[0])[0]

    @property
    def buffer_name(self) -> str:
        """The device buffer's expression at the call (``d_out`` in
        ``cudaMemcpy(h, d_out, n, ...)``), else the call site."""
        if self.call == "cudaMallocManaged":
            return "managed buffer"
        if self.call == "__managed__":
            return self.args_text
        args = _split_args(self.args_text)
        if len(args) >= 2 and args[1].strip():
            return " ".join(args[1].split())
        return self.site or f"copy #{self.seq}"

    @property
    def site(self) -> str:
        return f"{Path(self.file).name}:{self.line}" if self.file else ""


def _split_args(text: str) -> list[str]:
    parts, depth, last = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[last:i])
            last = i + 1
    parts.append(text[last:])
    return parts


def read_dump(path: str | Path) -> list[Copy]:
    """The copies recorded in a dump file (empty if the program made none)."""
    p = Path(path)
    if not p.is_file():
        return []
    data = p.read_bytes()
    copies: list[Copy] = []
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(data):
            raise SiriusError(f"error: copy dump {p} is truncated (the program stopped while "
                              "writing it)")
        chunk = data[pos : pos + n]
        pos += n
        return chunk

    def text() -> str:
        (n,) = struct.unpack("<I", take(4))
        return take(n).decode("utf-8", "replace")

    while pos < len(data):
        if take(4) != MAGIC:
            raise SiriusError(f"error: {p} is not a copy dump (bad record at byte {pos - 4})")
        seq, code, line = struct.unpack("<III", take(12))
        args_text, file, call = text(), text(), text()
        (n,) = struct.unpack("<Q", take(8))
        copies.append(Copy(seq, code, line, args_text, file, call, take(n)))
    return copies


# ------------------------------------------------------------------ buffers


@dataclass
class BufferDiff:
    """Comparison of one pair of copies."""

    index: int
    name: str
    site: str
    element: str
    count: int
    max_abs: float = 0.0
    max_rel: float = 0.0
    mismatches: int = 0
    first_index: int | None = None
    first_original: str = ""
    first_optimized: str = ""
    problem: str = ""  # a mismatch that is not about values (size, type)

    @property
    def ok(self) -> bool:
        return not self.problem and self.mismatches == 0


def _bf16_to_float(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


_PACK = {"f32": "<f", "f16": "<e"}


def _fmt(v, element: str = "f64") -> str:
    """Shortest text that reads back as the same value of the element type."""
    if not isinstance(v, float):
        return str(v)
    if not math.isfinite(v):
        return str(v)
    fmt = _PACK.get(element)
    if fmt is None:
        return repr(v)
    exact = struct.pack(fmt, v)
    for digits in range(1, 18):
        text = f"{v:.{digits}g}"
        if struct.pack(fmt, float(text)) == exact:
            return text
    return repr(v)


def _values(data: bytes, element: str) -> list:
    name, fmt, size, kind = next(e for e in ELEMENTS.values() if e[0] == element)
    n = len(data) // size
    vals = list(struct.unpack(f"<{n}{fmt}", data[: n * size]))
    if kind == "bf16":
        vals = [_bf16_to_float(v) for v in vals]
    return vals


def _compare_python(a: bytes, b: bytes, element: str, rtol: float, atol: float, diff: BufferDiff):
    kind = next(e for e in ELEMENTS.values() if e[0] == element)[3]
    size = next(e for e in ELEMENTS.values() if e[0] == element)[2]
    exact = rtol == 0 and atol == 0
    va, vb = _values(a, element), _values(b, element)
    for i, (x, y) in enumerate(zip(va, vb)):
        if kind in ("float", "bf16"):
            both_nan = x != x and y != y
            if exact:
                same = a[i * size : (i + 1) * size] == b[i * size : (i + 1) * size]
            else:
                same = both_nan or x == y or (
                    math.isfinite(x) and math.isfinite(y) and abs(x - y) <= atol + rtol * abs(x))
            if both_nan:
                d = 0.0
            elif x != x or y != y:
                d = math.inf
            elif x == y:
                d = 0.0
            else:
                d = abs(x - y)
        else:
            same = x == y if exact else abs(x - y) <= atol + rtol * abs(x)
            d = float(abs(x - y))
        if d > diff.max_abs:
            diff.max_abs = d
        if d > 0:
            rel = d / abs(x) if x not in (0, 0.0) and math.isfinite(x) else math.inf
            diff.max_rel = max(diff.max_rel, rel)
        if not same:
            diff.mismatches += 1
            if diff.first_index is None:
                diff.first_index = i
                diff.first_original, diff.first_optimized = _fmt(x, element), _fmt(y, element)


def _compare_numpy(np, a: bytes, b: bytes, element: str, rtol: float, atol: float,
                   diff: BufferDiff) -> None:
    if element == "bf16":
        ua = np.frombuffer(a, "<u2").astype(np.uint32) << 16
        ub = np.frombuffer(b, "<u2").astype(np.uint32) << 16
        va, vb = ua.view("<f4"), ub.view("<f4")
        bits_a, bits_b = np.frombuffer(a, "<u2"), np.frombuffer(b, "<u2")
    else:
        dt = np.dtype(_NUMPY_TYPES[element])
        va, vb = np.frombuffer(a, dt), np.frombuffer(b, dt)
        bits_a = bits_b = None
    is_float = va.dtype.kind == "f"
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if is_float:
            xa, xb = va.astype(np.float64), vb.astype(np.float64)
            nan_a, nan_b = np.isnan(xa), np.isnan(xb)
            d = np.abs(xa - xb)
            d[nan_a & nan_b] = 0.0
            d[nan_a ^ nan_b] = np.inf
            d[(xa == xb)] = 0.0
            if rtol == 0 and atol == 0:
                if bits_a is None:
                    ia = np.frombuffer(a, f"<u{va.dtype.itemsize}")
                    ib = np.frombuffer(b, f"<u{va.dtype.itemsize}")
                else:
                    ia, ib = bits_a, bits_b
                bad = ia != ib
            else:
                ok = (nan_a & nan_b) | (xa == xb) | (
                    np.isfinite(xa) & np.isfinite(xb) & (d <= atol + rtol * np.abs(xa)))
                bad = ~ok
            absx = np.abs(xa)
        else:
            xa, xb = va.astype(np.float64), vb.astype(np.float64)
            d = np.abs(xa - xb)
            absx = np.abs(xa)
            if rtol == 0 and atol == 0:
                bad = va != vb
            else:
                bad = d > atol + rtol * absx
        if d.size:
            diff.max_abs = float(np.max(d))
            rel = np.where(d > 0, np.where(absx > 0, d / np.where(absx > 0, absx, 1), np.inf), 0)
            diff.max_rel = float(np.max(rel))
    diff.mismatches = int(np.count_nonzero(bad))
    if diff.mismatches:
        i = int(np.argmax(bad))
        diff.first_index = i
        x, y = va[i], vb[i]
        diff.first_original = _fmt(float(x) if is_float else int(x), element)
        diff.first_optimized = _fmt(float(y) if is_float else int(y), element)


def compare_copies(k: int, a: Copy, b: Copy, rtol: float, atol: float) -> BufferDiff:
    element = a.element if a.element != "bytes" else b.element
    size = next(e for e in ELEMENTS.values() if e[0] == element)[2]
    diff = BufferDiff(k, a.buffer_name, a.site, element, len(a.data) // size)
    if len(a.data) != len(b.data):
        diff.problem = (f"sizes differ: original copied {len(a.data)} bytes, optimized "
                        f"{len(b.data)} bytes")
        return diff
    if len(a.data) % size:
        element, size = "bytes", 1
        diff.element, diff.count = element, len(a.data)
    if a.data == b.data:
        return diff
    try:
        import numpy as np
    except ImportError:  # pure Python fallback (slow for large buffers)
        _compare_python(a.data, b.data, element, rtol, atol, diff)
    else:
        _compare_numpy(np, a.data, b.data, element, rtol, atol, diff)
    return diff


# ------------------------------------------------------------------ output


def _numbers_match(x: str, y: str, rtol: float, atol: float) -> bool:
    if x == y:
        return True
    try:
        fx, fy = float(x), float(y)
    except ValueError:
        return False
    if fx != fx and fy != fy:
        return True
    if not (math.isfinite(fx) and math.isfinite(fy)):
        return fx == fy
    return abs(fx - fy) <= atol + rtol * abs(fx)


def _lines_match(a: str, b: str, rtol: float, atol: float) -> bool:
    if a == b:
        return True
    if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return False
    return all(_numbers_match(x, y, rtol, atol)
               for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b)))


@dataclass
class OutputDiff:
    compared: int = 0
    ignored: int = 0
    first_line: int | None = None
    original: str = ""
    optimized: str = ""

    @property
    def ok(self) -> bool:
        return self.first_line is None


_BARE_NUMBER = re.compile(r"\s*[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)\s*\w{0,4}\s*")


_PUNCTUATION = re.compile(r"[^\w]*")


def _timing_lines(lines: list[str]) -> dict[int, str]:
    """Lines reporting a timing, each with its timings masked: the numbers next to a word
    that names one (``time: 3.2 ms``, ``GPU Time in seconds: 0.00053``, ``bandwidth = 12
    GB/s``), and a bare number on the line after a label that names one without a number.
    The rest of such a line is still compared: ``stopped at the second stage; checksum
    12.5`` names no timing next to its number."""
    out: dict[int, str] = {}
    for i, line in enumerate(lines):
        if not TIMING_LINE.search(line):
            continue
        if not _NUMBER.search(line):
            if i + 1 < len(lines) and _BARE_NUMBER.fullmatch(lines[i + 1]):
                out[i + 1] = "#"
            continue
        words = line.split(" ")
        named = [k for k, w in enumerate(words) if not _PUNCTUATION.fullmatch(w)]  # "=", ":" are skipped
        timed = [bool(TIMING_LINE.search(words[k])) for k in named]
        near = {k: any(timed[max(0, j - 1):j + 2]) for j, k in enumerate(named)}
        masked = [_NUMBER.sub("#", w) if _NUMBER.search(w) and near.get(k) else w for k, w in enumerate(words)]
        if masked != words:
            out[i] = " ".join(masked)
    return out


def compare_output(a: str, b: str, rtol: float, atol: float) -> OutputDiff:
    la, lb = a.splitlines(), b.splitlines()
    ta, tb = _timing_lines(la), _timing_lines(lb)
    diff = OutputDiff()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else None
        y = lb[i] if i < len(lb) else None
        if x is not None and y is not None and i in ta and i in tb:
            x, y = ta[i], tb[i]  # the timings masked, the rest compared
            if _lines_match(x, y, rtol, atol):
                diff.ignored += 1
                continue
            x, y = la[i], lb[i]
        diff.compared += 1
        if x is None or y is None or not _lines_match(x, y, rtol, atol):
            diff.first_line = i + 1
            diff.original = "<no line>" if x is None else x
            diff.optimized = "<no line>" if y is None else y
            break
    return diff


# ------------------------------------------------------------------ report


@dataclass
class Report:
    """Everything ``sirius verify`` found."""

    buffers: list[BufferDiff] = field(default_factory=list)
    count_original: int = 0
    count_optimized: int = 0
    output: OutputDiff | None = None
    status_original: int = 0
    status_optimized: int = 0
    rtol: float = 0.0
    atol: float = 0.0

    @property
    def ok(self) -> bool:
        return (all(b.ok for b in self.buffers)
                and self.count_original == self.count_optimized
                and (self.output is None or self.output.ok)
                and self.status_original == self.status_optimized)

    def render(self) -> str:
        tol = ("bit-exact" if self.rtol == 0 and self.atol == 0
               else f"rtol {self.rtol:g}, atol {self.atol:g}")
        rows = [("#", "buffer", "site", "elements", "type", "max abs diff", "max rel diff",
                 "result")]
        for b in self.buffers:
            result = "equal" if b.ok else ("DIFFERENT" if not b.problem else "MISMATCH")
            rows.append((str(b.index), b.name, b.site or "-", str(b.count), b.element,
                         f"{b.max_abs:.3g}", f"{b.max_rel:.3g}", result))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [f"compared {len(self.buffers)} buffer(s) copied back to the host ({tol})"]
        if not self.buffers and self.count_original == self.count_optimized == 0:
            lines.append("note: neither program copied data back to the host; only the printed "
                         "output and the exit status were compared")
        if len(self.buffers):
            for r in rows:
                lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        for b in self.buffers:
            if b.problem:
                lines.append(f"buffer #{b.index} {b.name}: {b.problem}")
            elif b.mismatches:
                lines.append(
                    f"buffer #{b.index} {b.name}: {b.mismatches} of {b.count} elements differ; "
                    f"first at index {b.first_index}: original {b.first_original}, "
                    f"optimized {b.first_optimized}")
        if self.count_original != self.count_optimized:
            lines.append(f"the original copied {self.count_original} buffer(s) back, the "
                         f"optimized program {self.count_optimized}")
        if self.output is not None:
            o = self.output
            ignored = f" ({o.ignored} timing line(s) ignored)" if o.ignored else ""
            if o.ok:
                lines.append(f"printed output: equal{ignored}")
            else:
                lines.append(f"printed output differs at line {o.first_line}{ignored}:")
                lines.append(f"  original:  {o.original}")
                lines.append(f"  optimized: {o.optimized}")
        if self.status_original != self.status_optimized:
            lines.append(f"exit status differs: original {self.status_original}, optimized "
                         f"{self.status_optimized}")
        lines.append("result: " + ("all equal" if self.ok else "DIFFERENT"))
        return "\n".join(lines)


def compare_runs(original: list[Copy], optimized: list[Copy], *, stdout_original: str | None,
                 stdout_optimized: str | None, status_original: int, status_optimized: int,
                 rtol: float = 0.0, atol: float = 0.0) -> Report:
    """Compare what two runs copied back, printed and returned."""
    report = Report(count_original=len(original), count_optimized=len(optimized),
                    status_original=status_original, status_optimized=status_optimized,
                    rtol=rtol, atol=atol)
    for k, (a, b) in enumerate(zip(original, optimized), start=1):
        report.buffers.append(compare_copies(k, a, b, rtol, atol))
    if stdout_original is not None and stdout_optimized is not None:
        report.output = compare_output(stdout_original, stdout_optimized, rtol, atol)
    return report
