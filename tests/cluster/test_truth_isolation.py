"""Labels are unreachable: nothing a policy or a stop rule is handed leads to the ground truth.

A custom Policy and StopRule capture every ClusterView and EvalEvent the engine gives them; the
test then walks the object graph reachable from those (gc.get_referents, recursively) and checks
that no truth-bearing object (JobTruth, the curves, the Workload, the Engine) and no attribute
named like a label is reachable.
"""

from __future__ import annotations

import gc
import types
from collections.abc import Iterable, Iterator

import numpy as np
import pytest

from rlguard.cluster.curves import GaoCurve, SaturatingCurve
from rlguard.cluster.engine import Engine
from rlguard.cluster.events import CONTINUE, Decision, EvalEvent
from rlguard.cluster.jobs import JobKind, JobTruth, Workload
from rlguard.cluster.policies.base import Policy
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.stopping.base import StopRule
from rlguard.cluster.view import ClusterView
from rlguard.cluster.workload import paper_workload

FORBIDDEN_TYPES = (JobTruth, GaoCurve, SaturatingCurve, Workload, Engine)
FORBIDDEN_NAMES = ("hacking", "peak", "duration_s", "true_scores", "eval_curve")

_SKIP = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.CodeType,
    types.FrameType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
)
_ATOMS = (str, bytes, int, float, complex, bool, type(None), np.generic, np.dtype)


def _children(obj: object) -> Iterator[object]:
    if isinstance(obj, types.MethodType):  # a bound method leaks its instance, not its function
        yield obj.__self__
        return
    if isinstance(obj, types.FunctionType):  # closures and defaults, never the module globals
        for cell in obj.__closure__ or ():
            yield cell.cell_contents
        yield from obj.__defaults__ or ()
        yield from (obj.__kwdefaults__ or {}).values()
        return
    if isinstance(obj, np.ndarray):
        if obj.base is not None:
            yield obj.base
        if obj.dtype == object:
            yield from obj.ravel().tolist()
        return
    if isinstance(obj, dict):
        yield from obj.keys()
        yield from obj.values()
        return
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        yield d
    slots = [s for cls in type(obj).__mro__ for s in getattr(cls, "__slots__", ())]
    for name in slots:
        if hasattr(obj, name):
            yield getattr(obj, name)
    yield from gc.get_referents(obj)


def reachable(roots: Iterable[object]) -> list[object]:
    """Every object reachable from `roots`: instances, containers, arrays (no classes, modules)."""
    seen: dict[int, object] = {}
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _ATOMS):
            continue
        seen[id(obj)] = obj
        if isinstance(obj, _SKIP) and not isinstance(obj, types.FunctionType):
            continue
        stack.extend(_children(obj))
    return list(seen.values())


def attribute_names(obj: object) -> set[str]:
    names: set[str] = set()
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        names.update(k for k in d if isinstance(k, str))
    for cls in type(obj).__mro__:
        names.update(getattr(cls, "__slots__", ()))
    if not isinstance(obj, (dict, list, tuple, set, frozenset, np.ndarray, *_SKIP)):
        names.update(dir(obj))
    return names


def forbidden_names(names: Iterable[str]) -> list[str]:
    return sorted(n for n in names if any(bad in n.lower() for bad in FORBIDDEN_NAMES))


class CapturingPolicy(Policy):
    """Least remaining estimate first (preemptive, ticking), keeping every view it is shown."""

    name = "capture"
    preemptive = True
    tick_s = 1800.0

    def __init__(self) -> None:
        self.views: list[ClusterView] = []

    def priority(self, view: ClusterView) -> np.ndarray:
        self.views.append(view)
        return np.maximum(view.estimate_s - view.executed_s, 1.0) * view.gpus


class CapturingRule(StopRule):
    """Stops after two consecutive declines; keeps every event it is shown, for every job kind."""

    name = "capture"

    def __init__(self) -> None:
        super().__init__(job_kinds=[str(k) for k in JobKind])
        self.events: list[EvalEvent] = []

    def new_state(self) -> list[float]:
        return []

    def decide(self, state: list[float], event: EvalEvent) -> Decision:
        self.events.append(event)
        state.append(event.score)
        if len(state) >= 3 and state[-1] < state[-2] < state[-3]:
            return Decision(True, "two declines")
        return CONTINUE


@pytest.fixture(scope="module")
def captured() -> tuple[CapturingPolicy, CapturingRule, Workload]:
    cfg = ScenarioConfig(n_jobs=80, gpus=16)  # a small cluster, so jobs queue and preempt
    workload = paper_workload(cfg, 1)
    policy, rule = CapturingPolicy(), CapturingRule()
    result = Engine(workload, Scheduler(policy, rule), gpus=cfg.gpus).run()
    assert not np.isnan(result.finish_s).any()
    assert result.stopped.any()  # the rule did act, so decisions flowed back
    assert result.preemptions.any()  # and the views were used to preempt
    # Materialise every public attribute of every view (cached properties included).
    for view in policy.views:
        for name in dir(view):
            if not name.startswith("_"):
                getattr(view, name)
    return policy, rule, workload


def test_the_engine_showed_views_and_events(captured) -> None:
    policy, rule, _ = captured
    assert len(policy.views) > 10
    assert len(rule.events) > 100
    kinds = {e.kind for e in rule.events}
    assert kinds <= {str(k) for k in JobKind}
    assert all(type(e.kind) is str for e in rule.events)  # plain strings, not enum objects


def test_the_walker_finds_truth_when_it_is_there(captured) -> None:
    # Guard against a vacuous walk: from the workload itself every forbidden type is reachable.
    _, _, workload = captured
    found = {type(o) for o in reachable([workload])}
    assert {JobTruth, GaoCurve, SaturatingCurve, Workload} <= found
    truth = workload.truths[0]
    assert forbidden_names(attribute_names(truth))  # duration_s, true_scores, hacking, ...


def test_the_walker_sees_through_private_attributes_and_bound_methods(captured) -> None:
    # A planted leak, two hops behind private attributes, and one behind a bound method.
    policy, _, workload = captured
    view = policy.views[0]
    table = view._table

    class Holder:
        def __init__(self, engine_like: object) -> None:
            self._engine = engine_like

        def peek(self) -> object:
            return self._engine

    planted = ClusterView(table, view.rows, view.now, view.capacity)
    planted.__dict__["_hidden"] = {"x": [(Holder(workload.truths[0]).peek,)]}
    found = reachable([planted])
    assert any(isinstance(o, JobTruth) for o in found)


def test_no_truth_object_is_reachable_from_views_or_events(captured) -> None:
    policy, rule, _ = captured
    objects = reachable([*policy.views, *rule.events, policy, rule])
    leaked = [type(o).__name__ for o in objects if isinstance(o, FORBIDDEN_TYPES)]
    assert leaked == []
    # The walk did get into the table behind the views.
    assert any(type(o).__name__ == "VisibleTable" for o in objects)
    assert any(isinstance(o, np.ndarray) for o in objects)


def test_no_label_named_attribute_is_reachable(captured) -> None:
    policy, rule, _ = captured
    objects = reachable([*policy.views, *rule.events, policy, rule])
    offenders = {
        f"{type(o).__name__}.{name}"
        for o in objects
        for name in forbidden_names(attribute_names(o))
    }
    assert offenders == set()


def test_view_public_attributes_carry_no_labels(captured) -> None:
    policy, _, _ = captured
    public = {n for n in dir(ClusterView) if not n.startswith("_")}
    public |= {n for n in dir(policy.views[0]) if not n.startswith("_")}
    assert forbidden_names(public) == []
    event_fields = {n for n in dir(EvalEvent) if not n.startswith("_")}
    assert forbidden_names(event_fields) == []


def test_view_values_match_what_the_platform_knows(captured) -> None:
    # The view exposes submission fields, not the truth: estimates are the user's, not durations.
    policy, _, workload = captured
    by_id = {s.job_id: s for s in workload.specs}
    durations = {
        s.job_id: t.duration_s for s, t in zip(workload.specs, workload.truths, strict=True)
    }
    view = policy.views[-1]
    for job_id, est, gpus in zip(view.job_ids, view.estimate_s, view.gpus, strict=True):
        assert est == by_id[job_id].estimate_s
        assert gpus == by_id[job_id].gpus
    assert any(
        est != durations[job_id] for job_id, est in zip(view.job_ids, view.estimate_s, strict=True)
    )
