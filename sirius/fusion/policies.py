"""Fusion policies: which of the merges the legality checks proved are made.

The legality checks (``fusion.regions``, ``fusion.merge_legality``) decide what *may* be
fused; a policy decides what *is* fused. The scheduler (``fusion.scheduler``) proposes one
merge at a time, and only a merge every legality check has already passed (same shapes or a proven re-indexing,
thread- or block-level dependences, no dependence path through a launch left
out, resources that fit, ...): a policy cannot make an illegal fusion, it can
only decline a legal one. A declined merge is recorded as a refusal of kind
``RefusalKind.POLICY`` naming the policy, so every two launches left apart
still have a reason in the report.

The interface is one method::

    class OnlyScale(FusionPolicy):
        name = "only-scale"
        summary = "only kernels whose name contains 'scale' fuse"

        def accept(self, merge: Merge) -> bool:
            return all("scale" in launch.kernel for launch in merge.launches)

``merge.kind`` says what is proposed (``MergeKind``):

- ``vertical`` (P1): the launches of ``merge.joining`` run after the group's lane
  in the same thread (``merge.lanes`` is that one lane, in the order it would run;
  ``merge.reindexed``: the joining launch runs re-indexed onto the lane's threads);
- ``horizontal`` (P3): the group of ``merge.joining`` runs side by side with
  another, in different blocks of one launch (``merge.lanes``: every lane of the
  merged group);
- ``wavefront``: a group that is the whole body of a two-deep host loop nest runs
  each anti-diagonal of iterations as one launch (``merge.joining`` is empty).

``merge.dependent`` says a dependence joins the two sides. Each ``CandidateLaunch``
gives the launch statement, the kernel's name, its source line, grid and block
(constants, or None when known only at run time) and the analysis' facts: the
``KernelModel`` (accesses, shared arrays, barriers, warp operations) and the
``LaunchInstance`` (arguments bound to allocations, access maps).

The order of the proposals is the scheduler's: vertical merges pair the groups of
a region in program order, and the first pair the policy accepts is merged before
the scan starts again; horizontal merges take each group in the order of isl's time
steps and join it to the first group on its step (then within its slack) that the
policy accepts; wavefronts come last, one per region left as one group. A policy
must answer the same merge the same way each time.

Two optional methods make a policy rank what is legal (XLA's priority fusion: legality
explains, profitability orders): ``priority(merge)`` returns a number, and the scheduler
then makes, of all the merges legal and accepted at that point (every pair of a scan,
every host a group could join), the one of highest priority (the first in the order
above on a tie); None (the default) keeps first fit. ``begin(model)`` is called once
per program before any proposal, with the ``ProgramModel``, for a policy that needs
the whole program (a cost model's view of every launch). The cost-model policy
``profitable`` (``sirius.tuning.profitability``) is one: it accepts a merge the cost
model predicts faster and ranks merges by the time they save.

Shipped policies (``SHIPPED``; ``sirius optimize --policy NAME``):

- ``greedy``: every legal merge (the paper's policy, first fit; the default);
- ``none``: no merge, the program as written;
- ``horizontal``: only independent launches side by side (Rammer-like), and
  the wavefront of a single launch (independent instances side by side);
- ``patterns``: vertical merges of a GEMM, GEMV or convolution followed by
  bias-add and activation kernels only (TensorRT-like), recognised by the words of
  the kernel names (``Patterns.producers``, ``Patterns.epilogues``).

``load_policy(spec)`` turns ``NAME``, ``module:Class`` (imported from the current
folder or ``sys.path``) or ``path/to/file.py:Class`` into a policy object.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from sirius.analysis.kernel_model import KernelModel
from sirius.analysis.program_model import LaunchInstance
from sirius.core.errors import InputError, SiriusError


class MergeKind(str, Enum):
    """What a proposed merge does (compares equal to its value: ``kind == "vertical"``)."""

    VERTICAL = "vertical"  # one thread runs the fragments one after another
    HORIZONTAL = "horizontal"  # fragments run side by side, in different blocks
    WAVEFRONT = "wavefront"  # each anti-diagonal of a host loop nest's iterations is one launch


@dataclass(frozen=True, repr=False)
class CandidateLaunch:
    """One launch of a proposed merge, as a policy sees it."""

    instance: LaunchInstance

    @property
    def statement(self) -> int:
        """The index of the launch statement in the host program."""
        return self.instance.statement.index

    @property
    def kernel(self) -> str:
        """The kernel's name as the source writes it (``fused_conv2d_add_relu_kernel``)."""
        return self.instance.kernel.name

    @property
    def model(self) -> KernelModel:
        return self.instance.kernel

    @property
    def line(self) -> int | None:
        return self.instance.line

    @property
    def grid(self) -> tuple[int, int, int] | None:
        return self.instance.statement.grid.constant() if self.instance.statement.grid else None

    @property
    def block(self) -> tuple[int, int, int] | None:
        return self.instance.statement.block.constant() if self.instance.statement.block else None

    def __repr__(self) -> str:
        return f"CandidateLaunch(S{self.statement} {self.kernel}, line {self.line})"


@dataclass(frozen=True)
class Merge:
    """A merge the legality checks proved, proposed to a policy (see the module docstring)."""

    kind: MergeKind
    lanes: tuple[tuple[CandidateLaunch, ...], ...]  # the merged group, each lane in the order it runs
    joining: tuple[CandidateLaunch, ...]  # the launches this merge adds to the group proposed first
    dependent: bool  # a dependence joins the two sides
    reindexed: bool = False  # vertical: the joining launch runs re-indexed onto the lane's threads

    @classmethod
    def of(cls, kind: MergeKind, lanes, joining, dependent: bool, reindexed: bool = False) -> "Merge":
        """From launch instances: ``lanes`` a list of lists of them, ``joining`` a list."""
        return cls(kind, tuple(tuple(CandidateLaunch(i) for i in lane) for lane in lanes),
                   tuple(CandidateLaunch(i) for i in joining), dependent, reindexed)

    @property
    def launches(self) -> tuple[CandidateLaunch, ...]:
        """Every launch of the merged group, lane after lane."""
        return tuple(launch for lane in self.lanes for launch in lane)

    @property
    def kernels(self) -> tuple[str, ...]:
        return tuple(launch.kernel for launch in self.launches)


class FusionPolicy:
    """Base of fusion policies: ``name`` (shown in reports and refusals), ``summary`` (one
    line saying what it fuses) and ``accept(merge)``: True to make the legal merge
    proposed, False to decline it."""

    name = "custom"
    summary = ""

    def accept(self, merge: Merge) -> bool:
        raise NotImplementedError(f"{type(self).__name__}.accept(merge) must say True or False")

    def begin(self, model) -> None:
        """Called once per program, before its merges are proposed (optional)."""

    def priority(self, merge: Merge) -> float | None:
        """The rank of an accepted merge (higher first), or None for first fit (optional)."""
        return None


class Greedy(FusionPolicy):
    name = "greedy"
    summary = "every legal merge, first fit in program order (the paper's policy)"

    def accept(self, merge: Merge) -> bool:
        return True


class NoFusion(FusionPolicy):
    name = "none"
    summary = "no merge: every launch stays as written"

    def accept(self, merge: Merge) -> bool:
        return False


class HorizontalOnly(FusionPolicy):
    """Rammer-like: independent launches run side by side in one launch; nothing runs one
    after another in a thread (a wavefront only of one launch, whose instances on an
    anti-diagonal are independent)."""

    name = "horizontal"
    summary = "only independent launches side by side (Rammer-like)"

    def accept(self, merge: Merge) -> bool:
        if merge.kind == MergeKind.HORIZONTAL:
            return not merge.dependent
        if merge.kind == MergeKind.WAVEFRONT:
            return all(len(lane) == 1 for lane in merge.lanes)
        return False


def name_words(kernel: str) -> tuple[str, ...]:
    """The words of a kernel name, lower case, with the numbers TVM appends to variants
    dropped (``conv2d1`` -> ``conv2d``, ``add4`` -> ``add``) and camel case split:
    ``fused_conv2d1_add_relu_kernel`` -> ``fused conv2d add relu kernel``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", kernel).lower()
    return tuple(re.sub(r"\d+$", "", w) for w in re.split(r"[^a-z0-9]+", spaced) if re.sub(r"\d+$", "", w))


@dataclass(frozen=True)
class Patterns(FusionPolicy):
    """TensorRT-like fixed patterns: a lane is a producer (GEMM, GEMV or convolution)
    followed only by epilogues (bias-add, scale, activation), each depending on what
    runs before it. A kernel is a producer when a word of its name is in
    ``producers``; an epilogue when every word of its name, less those in ``ignored``,
    is in ``epilogues`` (``bias_add``, ``relu_kernel``, ``fused_add_relu_kernel``).
    Nothing is fused side by side, and no wavefront."""

    name: str = "patterns"
    summary: str = "only a GEMM or convolution followed by bias-add and activation kernels (TensorRT-like)"
    producers: tuple[str, ...] = ("gemm", "gemv", "matmul", "bmm", "dense", "linear", "conv",
                                  "conv1d", "conv2d", "conv3d", "convolution")
    epilogues: tuple[str, ...] = ("bias", "add", "scale", "relu", "gelu", "sigmoid", "tanh", "silu",
                                  "swish", "hardswish", "elu", "selu", "leaky", "mish", "softplus", "clip",
                                  "clamp", "minimum", "maximum", "activation", "act")
    ignored: tuple[str, ...] = ("fused", "kernel", "tir", "nn", "tvmgen", "default")

    def is_producer(self, kernel: str) -> bool:
        return any(w in self.producers for w in name_words(kernel))

    def is_epilogue(self, kernel: str) -> bool:
        words = [w for w in name_words(kernel) if w not in self.ignored]
        return bool(words) and all(w in self.epilogues for w in words)

    def accept(self, merge: Merge) -> bool:
        if merge.kind != MergeKind.VERTICAL or not merge.dependent:
            return False
        (lane,) = merge.lanes
        return self.is_producer(lane[0].kernel) and all(
            self.is_epilogue(launch.kernel) and not self.is_producer(launch.kernel) for launch in lane[1:])


SHIPPED: dict[str, type] = {p.name: p for p in (Greedy, NoFusion, HorizontalOnly, Patterns)}
DEFAULT = "greedy"


def policy_name(policy) -> str:
    return getattr(policy, "name", None) or type(policy).__name__


def accepts(policy, merge: Merge) -> bool:
    """The policy's answer on ``merge``; an exception or an answer that is not a bool is the
    policy's error, reported as such (exit 2)."""
    try:
        answer = policy.accept(merge)
    except Exception as err:
        raise SiriusError(f"error: the fusion policy {policy_name(policy)!r} failed on a {merge.kind.value} merge of "
                          f"{', '.join(merge.kernels)}: {type(err).__name__}: {err}") from err
    if not isinstance(answer, bool):
        raise SiriusError(f"error: the fusion policy {policy_name(policy)!r} answered {answer!r} on a "
                          f"{merge.kind.value} merge; accept(merge) must return True or False")
    return answer


def priority_of(policy, merge: Merge) -> float | None:
    """The policy's rank of an accepted merge (None: first fit; also for a policy without
    ``priority``); an exception or an answer that is not a number is the policy's error."""
    rank = getattr(policy, "priority", None)
    if rank is None:
        return None
    try:
        answer = rank(merge)
    except Exception as err:
        raise SiriusError(f"error: the fusion policy {policy_name(policy)!r} failed to rank a {merge.kind.value} "
                          f"merge of {', '.join(merge.kernels)}: {type(err).__name__}: {err}") from err
    if answer is not None and (isinstance(answer, bool) or not isinstance(answer, (int, float))):
        raise SiriusError(f"error: the fusion policy {policy_name(policy)!r} ranked a {merge.kind.value} merge "
                          f"{answer!r}; priority(merge) must return a number or None")
    return answer


def begin_program(policy, model) -> None:
    """Tell the policy which program its next proposals come from (if it asks)."""
    begin = getattr(policy, "begin", None)
    if begin is None:
        return
    try:
        begin(model)
    except Exception as err:
        raise SiriusError(f"error: the fusion policy {policy_name(policy)!r} failed in begin(model): "
                          f"{type(err).__name__}: {err}") from err


def declined(policy, merge: Merge) -> str:
    """The reason a refusal gives for a legal merge the policy declined."""
    summary = getattr(policy, "summary", "")
    return (f"the fusion policy '{policy_name(policy)}' declines this legal {merge.kind.value} fusion"
            + (f": {summary}" if summary else ""))


def _usage(spec: str, problem: str, shipped: dict[str, type] | None = None) -> InputError:
    return InputError(f"error: --policy {spec}: {problem}; the shipped policies are "
                      f"{', '.join(shipped or SHIPPED)} (or module:Class, path/to/file.py:Class)")


def load_policy(spec: str, shipped: dict[str, type] | None = None):
    """The policy ``spec`` names: a name in ``shipped`` (``SHIPPED`` by default; the commands
    add the cost-model policy), ``module:Class`` (the module imported with the current
    folder on ``sys.path``) or ``path/to/file.py:Class``. The class is called with no
    arguments (an object already made is taken as it is). Anything else is bad input
    (InputError, exit 2) naming the shipped policies."""
    shipped = SHIPPED if shipped is None else shipped
    if spec in shipped:
        return shipped[spec]()
    if ":" not in spec:
        raise _usage(spec, "unknown policy", shipped)
    where, _, attribute = spec.rpartition(":")
    if not where or not attribute:
        raise _usage(spec, "expected NAME, module:Class or path/to/file.py:Class", shipped)
    if where.endswith(".py") or os.sep in where or "/" in where:
        module = _import_file(spec, Path(where))
    else:
        module = _import_module(spec, where)
    made = getattr(module, attribute, None)
    if made is None:
        raise _usage(spec, f"{where} has no {attribute}")
    if isinstance(made, type):
        try:
            made = made()
        except Exception as err:
            raise _usage(spec, f"{attribute}() failed: {type(err).__name__}: {err}") from err
    if not callable(getattr(made, "accept", None)):
        raise _usage(spec, f"{attribute} is not a fusion policy (no accept(merge) method)")
    return made


def _import_module(spec: str, name: str):
    added = os.getcwd() not in sys.path
    if added:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise _usage(spec, f"cannot import {name}: {err}") from err
    except Exception as err:  # the user's module failed while importing
        raise _usage(spec, f"importing {name} failed: {type(err).__name__}: {err}") from err
    finally:
        if added:
            sys.path.remove(os.getcwd())


def _import_file(spec: str, path: Path):
    if not path.is_file():
        raise _usage(spec, f"no such file: {path}")
    name = "sirius_policy_" + re.sub(r"\W", "_", str(path.resolve().with_suffix("")))
    if name in sys.modules:
        return sys.modules[name]
    found = importlib.util.spec_from_file_location(name, path)
    if found is None or found.loader is None:
        raise _usage(spec, f"{path} cannot be imported as Python")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module  # dataclasses and pickling look their module up by name
    try:
        found.loader.exec_module(module)
    except Exception as err:
        del sys.modules[name]
        raise _usage(spec, f"importing {path} failed: {type(err).__name__}: {err}") from err
    return module
