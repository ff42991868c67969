"""Instructions take their text from the module's text (analysis/ir.py): printing each
one through llvmlite numbers the whole function again, which made the check of a fused
nasnet (thousands of instructions in one kernel) take 40 s of its 70. A switch's cases
and a landingpad's clauses belong to their instruction."""

from __future__ import annotations

from sirius.analysis.ir import parse_module

MODULE = """
declare i32 @__gxx_personality_v0(...)
declare void @may_throw()

define i32 @pick(i32 %x) personality ptr @__gxx_personality_v0 {
entry:
  switch i32 %x, label %other [
    i32 1, label %one
    i32 2, label %two
  ], !dbg !7
one:
  ret i32 10
two:
  invoke void @may_throw()
          to label %other unwind label %pad
pad:
  %lp = landingpad { ptr, i32 }
          cleanup
  ret i32 30
other:
  %y = add nsw i32 %x, 1, !dbg !8
  ret i32 %y
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!9}
!0 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus_14, file: !1, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "p.cu", directory: "/")
!5 = distinct !DISubprogram(name: "pick", scope: !1, file: !1, line: 3, unit: !0)
!7 = !DILocation(line: 4, column: 3, scope: !5)
!8 = !DILocation(line: 9, column: 7, scope: !5)
!9 = !{i32 2, !"Debug Info Version", i32 3}
"""


def test_each_instruction_has_its_whole_text_and_its_line():
    fn = parse_module(MODULE).functions["pick"]
    instrs = [i for b in fn.blocks for i in b.instrs]
    assert [i.opcode for i in instrs] == ["switch", "ret", "invoke", "landingpad", "ret", "add", "ret"]
    switch, invoke, pad, add = instrs[0], instrs[2], instrs[3], instrs[5]
    assert switch.text.startswith("switch i32 %x") and "i32 2, label %two" in switch.text and switch.line == 4
    assert "unwind label %pad" in invoke.text and pad.text.endswith("cleanup")
    assert add.text.startswith("%y = add nsw i32 %x, 1") and add.line == 9
