"""One generation phase over a set of generation functions: dispatch, faults, cut-and-migrate.

Round 1 runs every function's groups (cut at tau when migration is on). A function that dies is
replaced and its groups re-run from scratch on the replacement: sampling is keyed by (seed,
group, sample, position), so the re-run draws exactly what the lost run would have. After round 1
the unfinished groups (the long tail) are consolidated onto as few functions as their slots hold
(`plan_moves`); the others are released, and round 2 resumes the tail from its prefixes.

Samples are collected by (group, sample): each is recorded once, when it comes back finished.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from rlguard.runtime.executors.calls import ActorDied, as_completed
from rlguard.runtime.executors.faults import FaultPlan
from rlguard.runtime.executors.functions import GENERATION, ActorGeneration
from rlguard.runtime.executors.pool import Function, FunctionPool
from rlguard.runtime.generation.generator import GroupRequest, SampleResult
from rlguard.runtime.policies.migration import plan_moves


@dataclass
class ActorUse:
    """One generation function's share of the phase."""

    fid: str
    joined_s: float
    left_s: float | None = None  # released during the phase (else held to its end)
    busy_s: float = 0.0  # inside generate calls
    utilized_s: float = 0.0  # busy time weighted by the share of slots in use
    idle_slot_steps: int = 0

    def held_s(self, phase_end: float) -> float:
        return (self.left_s if self.left_s is not None else phase_end) - self.joined_s


@dataclass
class PhaseResult:
    samples: list[SampleResult]  # finished, sorted by (group, sample)
    start_s: float
    end_s: float
    actors: list[ActorUse]
    prefill_tokens: int = 0
    decode_tokens: int = 0
    prefill_s: float = 0.0  # summed over functions
    replaced: int = 0  # functions that died and were replaced
    migrated_groups: int = 0

    def actor_busy_s(self) -> list[float]:
        return [a.busy_s for a in self.actors]

    def actor_idle_s(self) -> list[float]:
        """Held time not spent decoding full batches: waiting for other actors, and the empty
        share of slots while a long tail decodes."""
        return [max(0.0, a.held_s(self.end_s) - a.utilized_s) for a in self.actors]

    @property
    def idle_slot_steps(self) -> int:
        return sum(a.idle_slot_steps for a in self.actors)


def resume_request(request: GroupRequest, samples: Sequence[SampleResult]) -> GroupRequest:
    """The group again, each sample continuing from the tokens it has (finished ones pass)."""
    prefix = [s.tokens for s in sorted(samples, key=lambda s: s.sample)]
    return GroupRequest(
        request.group_id,
        request.prompt_ids,
        request.k,
        request.max_new_tokens,
        request.temperature,
        request.seed,
        prefix,
    )


@dataclass
class GenerationPhase:
    pool: FunctionPool
    max_batch: int
    release_when_done: bool  # serverless: hand a function back as soon as it has no work
    fault: FaultPlan | None = None
    results: dict[tuple[int, int], SampleResult] = field(default_factory=dict)
    uses: dict[Function, ActorUse] = field(default_factory=dict)
    replacements: dict[Function, Function] = field(default_factory=dict)  # dead -> new
    open_samples: dict[int, int] = field(default_factory=dict)  # group -> samples still to decode
    result: PhaseResult = field(init=False)

    def run(
        self, work: Sequence[tuple[Function, list[GroupRequest]]], tau: float | None
    ) -> PhaseResult:
        start = time.perf_counter()
        expected = {(r.group_id, s) for _, requests in work for r in requests for s in range(r.k)}
        self.result = PhaseResult([], start, start, [])
        for function, _ in work:
            self._join(function, start)
        tails = self._round(list(work), tau, self.fault)
        if tails:
            self._round(self._consolidate(tails), None, None)
        for function, use in self.uses.items():
            if use.left_s is None and self.release_when_done:
                self._leave(function)
        self.result.end_s = time.perf_counter()
        missing = expected - set(self.results)
        if missing:
            raise RuntimeError(f"generation lost samples {sorted(missing)[:5]}")
        self.result.samples = [self.results[key] for key in sorted(expected)]
        self.result.actors = list(self.uses.values())
        return self.result

    def _join(self, function: Function, t: float) -> None:
        self.uses[function] = ActorUse(function.fid, max(t, function.ready_s))

    def _leave(self, function: Function) -> None:
        self.uses[function].left_s = time.perf_counter()
        self.pool.release(function)

    def _round(
        self,
        work: list[tuple[Function, list[GroupRequest]]],
        tau: float | None,
        fault: FaultPlan | None,
    ) -> dict[Function, list[GroupRequest]]:
        """Run the work; returns each function's unfinished groups, as resume requests."""
        pending: dict = {}

        def submit(function: Function, requests: list[GroupRequest], plan: FaultPlan | None):
            call = function.actor.generate.remote(requests, tau, plan)
            pending[call] = (function, requests, time.perf_counter())

        for index, (function, requests) in enumerate(work):
            if requests:  # a held worker may get no group; it still counts as held
                submit(function, requests, fault if fault and fault.function == index else None)
        tails: dict[Function, list[GroupRequest]] = {}
        for done in as_completed(pending):
            function, requests, started = done.key
            self.pool.busy(function, started, done.at)
            self.uses[function].busy_s += done.at - started
            if isinstance(done.value, ActorDied):
                self.uses[function].left_s = done.at
                replacement = self.pool.replace(function, done.at, [GENERATION])
                self.replacements[function] = replacement
                self.result.replaced += 1
                self._join(replacement, replacement.ready_s)
                submit(replacement, requests, None)
                continue
            tail = self._collect(requests, done.value, self.uses[function])
            if tail:
                tails[function] = tail
            elif self.release_when_done:
                self._leave(function)
        return tails

    def _collect(
        self, requests: list[GroupRequest], call: ActorGeneration, use: ActorUse
    ) -> list[GroupRequest]:
        out = call.output
        use.utilized_s += call.utilized_s
        use.idle_slot_steps += call.idle_slot_steps
        r = self.result
        r.prefill_tokens += out.prefill_tokens
        r.decode_tokens += out.decode_tokens
        r.prefill_s += out.prefill_s
        by_group = defaultdict(list)
        for sample in out.samples:
            by_group[sample.group_id].append(sample)
            if sample.finished:
                self.results.setdefault((sample.group_id, sample.sample), sample)
        tail = []
        for request in requests:
            samples = by_group[request.group_id]
            self.open_samples[request.group_id] = sum(not s.finished for s in samples)
            if self.open_samples[request.group_id]:
                tail.append(resume_request(request, samples))
        return tail

    def _consolidate(
        self, tails: dict[Function, list[GroupRequest]]
    ) -> list[tuple[Function, list[GroupRequest]]]:
        """Keep the tail on the fewest functions whose slots hold it (those with the biggest tails
        keep theirs), move the rest there, release the emptied functions."""
        unfinished = {f: sum(self.open_samples[r.group_id] for r in rs) for f, rs in tails.items()}
        order = sorted(tails, key=lambda f: -unfinished[f])
        n_targets = min(len(order), max(1, math.ceil(sum(unfinished.values()) / self.max_batch)))
        targets, sources = order[:n_targets], order[n_targets:]
        k = max(r.k for reqs in tails.values() for r in reqs)
        index = {f: i for i, f in enumerate(order)}
        free = {index[f]: (self.max_batch - unfinished[f]) // k for f in targets}
        remaining = {index[f]: [r.group_id for r in tails[f]] for f in sources}
        requests = {r.group_id: r for reqs in tails.values() for r in reqs}
        work = {f: list(tails[f]) for f in order}
        for group_id, source, target in plan_moves(remaining, free):
            work[order[source]].remove(requests[group_id])
            work[order[target]].append(requests[group_id])
            self.result.migrated_groups += 1
        for function in order:
            if not work[function]:
                self._leave(function)
        return [(f, reqs) for f, reqs in work.items() if reqs]
