"""Reading copy dumps and comparing two runs (pure Python)."""

from __future__ import annotations

import math
import struct

import pytest

from sirius.backend import compare
from sirius.core.errors import SiriusError


def record(seq: int, code: int, data: bytes, args: str = "h, d_y, n, kind", line: int = 7) -> bytes:
    out = b"SRD1" + struct.pack("<III", seq, code, line)
    for text in (args, "prog.cu", "cudaMemcpy"):
        raw = text.encode()
        out += struct.pack("<I", len(raw)) + raw
    return out + struct.pack("<Q", len(data)) + data


def floats(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def test_read_dump_and_buffer_names(tmp_path):
    path = tmp_path / "d.bin"
    path.write_bytes(record(0, 1, floats(1, 2)) + record(1, 8, struct.pack("<2i", 3, 4), args=""))
    copies = compare.read_dump(path)
    assert [c.element for c in copies] == ["f32", "i32"]
    assert copies[0].buffer_name == "d_y" and copies[0].site == "prog.cu:7"
    assert copies[1].buffer_name == "prog.cu:7"
    assert compare.read_dump(tmp_path / "absent.bin") == []


def test_truncated_or_foreign_dump_is_an_error(tmp_path):
    path = tmp_path / "d.bin"
    path.write_bytes(record(0, 1, floats(1, 2))[:-3])
    with pytest.raises(SiriusError, match="truncated"):
        compare.read_dump(path)
    path.write_bytes(b"JUNKJUNK")
    with pytest.raises(SiriusError, match="not a copy dump"):
        compare.read_dump(path)


def copy(code: int, data: bytes) -> compare.Copy:
    return compare.Copy(0, code, 3, "h, d_out, n, k", "p.cu", "cudaMemcpy", data)


@pytest.mark.parametrize("use_numpy", [True, False])
def test_float_comparison_bit_exact_and_tolerant(monkeypatch, use_numpy):
    if not use_numpy:
        import builtins

        real_import = builtins.__import__

        def no_numpy(name, *args, **kwargs):
            if name == "numpy":
                raise ImportError("no numpy")
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_numpy)
    else:
        pytest.importorskip("numpy")
    a = copy(1, floats(1.0, 2.0, float("nan"), 4.0))
    b = copy(1, floats(1.0, 2.0001, float("nan"), 4.0))
    exact = compare.compare_copies(1, a, b, 0.0, 0.0)
    assert exact.mismatches == 1 and exact.first_index == 1
    assert (exact.first_original, exact.first_optimized) == ("2", "2.0001")
    assert math.isclose(exact.max_abs, 0.0001, rel_tol=1e-2)
    loose = compare.compare_copies(1, a, b, 1e-3, 0.0)
    assert loose.ok and loose.max_rel > 0
    zero_sign = compare.compare_copies(1, copy(1, floats(0.0)), copy(1, floats(-0.0)), 0, 0)
    assert not zero_sign.ok  # bit-exact means bit-exact
    nan_vs_value = compare.compare_copies(1, copy(1, floats(float("nan"))), copy(1, floats(1.0)),
                                          1.0, 1.0)
    assert not nan_vs_value.ok and nan_vs_value.max_abs == math.inf


def test_integers_halves_and_sizes():
    ints = compare.compare_copies(1, copy(8, struct.pack("<3i", 1, 2, 3)),
                                  copy(8, struct.pack("<3i", 1, 5, 3)), 0, 0)
    assert ints.mismatches == 1 and (ints.first_original, ints.first_optimized) == ("2", "5")
    halves = compare.compare_copies(1, copy(3, struct.pack("<2e", 1.5, 2.0)),
                                    copy(3, struct.pack("<2e", 1.5, 2.0)), 0, 0)
    assert halves.ok and halves.element == "f16" and halves.count == 2
    sizes = compare.compare_copies(1, copy(1, floats(1.0)), copy(1, floats(1.0, 2.0)), 0, 0)
    assert not sizes.ok and "sizes differ" in sizes.problem


def test_output_comparison_ignores_timing_and_uses_tolerance():
    a = "checksum: 1.000000\nkernel time: 3.2 ms\nreference: OK\n"
    b = "checksum: 1.000001\nkernel time: 9.9 ms\nreference: OK\n"
    exact = compare.compare_output(a, b, 0, 0)
    assert exact.first_line == 1 and exact.ignored == 0
    loose = compare.compare_output(a, b, 1e-5, 0)
    assert loose.ok and loose.ignored == 1
    missing = compare.compare_output(a, a + "extra\n", 0, 0)
    assert missing.first_line == 4 and missing.original == "<no line>"


def test_report_exit_decision_and_table():
    same = copy(1, floats(1.0, 2.0))
    report = compare.compare_runs([same], [same], stdout_original="x\n", stdout_optimized="x\n",
                                  status_original=0, status_optimized=0)
    assert report.ok and "d_out" in report.render() and "all equal" in report.render()
    fewer = compare.compare_runs([same], [], stdout_original=None, stdout_optimized=None,
                                 status_original=0, status_optimized=0)
    assert not fewer.ok and "copied 1 buffer(s) back, the optimized program 0" in fewer.render()
    status = compare.compare_runs([], [], stdout_original=None, stdout_optimized=None,
                                  status_original=0, status_optimized=1)
    assert not status.ok and "exit status differs" in status.render()


def test_a_line_naming_a_timing_still_compares_its_other_numbers():
    """Only the numbers next to a word that names a timing are ignored: a result on the same
    line, or on a line whose words only look like a unit ("second stage"), is compared."""
    assert compare.compare_output("time: 3.2 ms, checksum 456.7\n", "time: 1.1 ms, checksum 456.7\n", 0, 0).ok
    assert not compare.compare_output("time: 3.2 ms, checksum 456.7\n", "time: 3.2 ms, checksum 450.0\n", 0, 0).ok
    stopped = "stopped (no second stage requested); partial checksum: {}\n"
    assert not compare.compare_output(stopped.format("12258.0"), stopped.format("0.0"), 0, 0).ok
    assert compare.compare_output("bandwidth = 12.5 GB/s\n", "bandwidth = 11.0 GB/s\n", 0, 0).ok
    assert compare.compare_output("GPU Time in seconds:\n0.00053\n", "GPU Time in seconds:\n0.00071\n", 0, 0).ok
