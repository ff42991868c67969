"""The fuzzers' check of a rebuild with other macro values (sirius.testing.rebuild): which
generated kernels must not run, read from the optimizer's report."""

from sirius.testing.rebuild import generated_kernels_over

REPORT = {
    "groups": [
        {"kernel": "sirius_fused_0", "lanes": [[{"launch": 1, "kernel": "gain_map"}, {"launch": 2, "kernel": "nbr"}]]},
        {"kernel": "sirius_fused_1", "lanes": [[{"launch": 3, "kernel": "map1"}], [{"launch": 4, "kernel": "map2"}]]},
    ],
    "cooperative": [
        {"region": 1, "kernel": "sirius_coop_0",
         "phases": [[{"launch": 5, "kernel": "shift_macro"}], [{"launch": 6, "kernel": "full_sum"}]]},
    ],
    "cell_waves": [{"kernel": "sirius_wave_0", "cells": [{"kernels": [{"kernel": "decay"}]}]}],
}


def test_kernels_generated_over_a_macro_kernel_are_found_at_any_depth():
    assert generated_kernels_over(REPORT, {"gain_map"}) == {"sirius_fused_0"}
    assert generated_kernels_over(REPORT, {"shift_macro", "decay"}) == {"sirius_coop_0", "sirius_wave_0"}


def test_a_generated_kernel_is_not_its_own_member():
    assert generated_kernels_over(REPORT, {"sirius_fused_1"}) == set()
    assert generated_kernels_over(REPORT, {"absent"}) == set()
    assert generated_kernels_over({"groups": [], "cooperative": None}, {"gain_map"}) == set()
