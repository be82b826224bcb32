"""The generation phase as a discrete-event simulation of continuously batched actors (vLLM-like).

Each actor decodes up to `max_batch` sequences at once. A decode step's time depends on how many
sequences run and on their total context (`TimeProfile.decode_step_s`): every step reads each
running sequence's KV cache, so long sequences cost more per step than short ones. Between steps,
finished sequences leave and queued ones are admitted after a batched prefill (their prompt once per
group with deduplicated prefill, the shared prefix once per actor; every sample's full prompt
without it).

The KV cache holds `kv_capacity_tokens` (vLLM's blocks under gpu_memory_utilization). As in vLLM,
a queued sequence is admitted when its context fits now (optimistically: it will grow), and when
the running contexts outgrow the cache the most recently admitted sequence is preempted: it keeps
its tokens, goes back to the head of the queue and is prefilled again (prompt and tokens so far)
when it is readmitted; no sequence is admitted in a step that preempted.

With cut-and-migrate, an actor that has finished a fraction tau of its sequences hands all the
rest to actors with free slots and KV room (when they fit) and is released; a moved sequence keeps
its tokens and is prefilled again on its new actor (prompt and tokens so far). An actor that has
received a tail is a consolidation target and is not cut itself: cutting it would move the same
tail again, prefilling it once more, until every tail sat on the last actor standing.

Events are completions, preemptions and cuts, so the cost is O(sequences log sequences), not
O(tokens): between events a batch is fixed and its step times have a closed form.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from rlguard.runtime.policies.migration import plan_moves, should_cut
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.sim.workload import TokenBatch


@dataclass(frozen=True)
class ActorWork:
    """What one actor's generation did, counted in steps and tokens: its time is linear in these
    for any profile without a compute floor (calib/fit.py fits that line)."""

    steps: int  # decode steps
    seq_steps: int  # sequences summed over decode steps (tokens decoded)
    context_tokens: int  # KV-cache tokens read, summed over decode steps
    prefill_tokens: int


@dataclass
class _Actor:
    queue: deque[int] = field(default_factory=deque)
    running: list[tuple[int, int]] = field(default_factory=list)  # heap of (finish step, seq)
    steps: int = 0  # decode steps this actor has run
    clock: float = 0.0
    total: int = 0
    finished: int = 0
    context_base: int = 0  # running context = context_base + len(running) * steps
    cut: bool = False
    received: bool = False  # holds migrated sequences: a consolidation target, never cut
    end_s: float | None = None
    epoch: int = 0
    prompt_cached: set[int] = field(default_factory=set)
    prefix_cached: bool = False
    seq_steps: int = 0
    context_read: int = 0
    prefilled: int = 0

    @property
    def active(self) -> bool:
        return bool(self.running or self.queue)

    @property
    def context(self) -> int:
        """KV-cache tokens held by the running sequences."""
        return self.context_base + len(self.running) * self.steps


@dataclass
class GenerationResult:
    end_s: float  # the phase ends when the last sequence does
    actor_end_s: list[float]  # when each actor's work ended (its last sequence, or its cut)
    seq_end_s: np.ndarray  # per sequence (group * K + sample): when it finished
    seq_tokens: np.ndarray  # per sequence: tokens generated, summed over the actors it ran on
    prefill_tokens: int
    decode_tokens: int
    moved: int  # sequences migrated
    cuts: int  # actors released by a cut
    preempted: int  # sequences evicted from a full KV cache (and later prefilled again)
    actor_work: list[ActorWork]


class _Generation:
    def __init__(
        self,
        assignment: list[list[int]],
        batch: TokenBatch,
        profile: TimeProfile,
        dedup: bool,
        tau: float | None,
    ) -> None:
        self.batch, self.profile, self.dedup, self.tau = batch, profile, dedup, tau
        k = batch.k
        # per-sequence state as plain lists: the event loop reads them one element at a time
        self.length = batch.lengths.reshape(-1).tolist()
        n = len(self.length)
        self.prompt_len = np.repeat(batch.prompt_tokens + batch.prefix_tokens, k).tolist()
        self.group_prompt = batch.prompt_tokens.tolist()
        self.done_before = [0] * n  # tokens generated before the current admission
        self.admit_step = [0] * n
        self.admit_order = [0] * n  # preemption evicts the latest admitted
        self.admitted = 0
        self.seq_end = [float("nan")] * n
        self.seq_tokens = [0] * n
        self.prefill_tokens = self.decode_tokens = 0
        self.moved = self.cuts = self.preempted = 0
        self.actors = [_Actor() for _ in assignment]
        for actor, groups in zip(self.actors, assignment, strict=True):
            actor.queue.extend(g * k + j for g in groups for j in range(k))
            actor.total = len(actor.queue)
        self.events: list[tuple[float, int, int, int]] = []  # (time, actor, epoch, steps)

    def run(self) -> GenerationResult:
        for a in range(len(self.actors)):
            self._admit(a)
            self._schedule(a)
        while self.events:
            t, a, epoch, steps = heapq.heappop(self.events)
            if epoch != self.actors[a].epoch:
                continue  # superseded: the actor's batch changed since this was scheduled
            preempted = self._advance(a, steps, t)
            self._maybe_cut(a)
            if not preempted:
                self._admit(a)
            self._schedule(a)
        seq_end = np.array(self.seq_end)
        if np.isnan(seq_end).any():
            raise RuntimeError("generation ended with unfinished sequences")
        ends = [0.0 if x.end_s is None else x.end_s for x in self.actors]
        return GenerationResult(
            max(ends, default=0.0),
            ends,
            seq_end,
            np.array(self.seq_tokens),
            self.prefill_tokens,
            self.decode_tokens,
            self.moved,
            self.cuts,
            self.preempted,
            [ActorWork(x.steps, x.seq_steps, x.context_read, x.prefilled) for x in self.actors],
        )

    # -- KV-cache accounting -------------------------------------------------------------------

    def _need(self, seq: int) -> int:
        """KV tokens `seq` occupies when (re)admitted: its prompt and the tokens it already has."""
        return self.prompt_len[seq] + self.done_before[seq]

    def _kv_room(self, actor: _Actor) -> float:
        """KV tokens still free after the running sequences and one more step of each."""
        cap = self.profile.kv_capacity_tokens
        return float("inf") if cap is None else cap - actor.context - len(actor.running)

    # -- admission, prefill, decoding ----------------------------------------------------------

    def _prefill_cost(self, actor: _Actor, seq: int) -> int:
        """Tokens this actor must prefill to (re)start `seq`."""
        group = seq // self.batch.k
        prompt = 0
        if not self.dedup:
            prompt = self.prompt_len[seq]
        elif group not in actor.prompt_cached:
            actor.prompt_cached.add(group)
            prompt = self.group_prompt[group]
            if not actor.prefix_cached:
                actor.prefix_cached = True
                prompt += self.batch.prefix_tokens
        return prompt + self.done_before[seq]

    def _admit(self, a: int) -> None:
        actor, tokens = self.actors[a], 0
        if not actor.queue:
            return
        while actor.queue and len(actor.running) < self.profile.max_batch:
            seq = actor.queue[0]
            if actor.running and self._need(seq) + 1 > self._kv_room(actor):
                break  # vLLM admits in order: the head waits until it fits
            actor.queue.popleft()
            tokens += self._prefill_cost(actor, seq)
            self.admit_step[seq] = actor.steps
            self.admit_order[seq] = self.admitted
            self.admitted += 1
            actor.context_base += self._need(seq) - actor.steps
            left = self.length[seq] - self.done_before[seq]
            heapq.heappush(actor.running, (actor.steps + left, seq))
        actor.clock += tokens * self.profile.prefill_s_per_token
        actor.prefilled += tokens
        self.prefill_tokens += tokens

    def _steps_to_event(self, a: int) -> int:
        """Decode steps until the next completion, or until the KV cache cannot take another."""
        actor = self.actors[a]
        steps = actor.running[0][0] - actor.steps
        if len(actor.running) > 1 and self.profile.kv_capacity_tokens is not None:
            room = self.profile.kv_capacity_tokens - actor.context
            steps = min(steps, max(0, room // len(actor.running)))
        return steps

    def _steps_s(self, actor: _Actor, steps: int) -> float:
        return self.profile.decode_steps_s(len(actor.running), actor.context, steps)

    def _stop(self, actor: _Actor, seq: int) -> None:
        """Take `seq` out of the running batch's context (the heap entry is the caller's job)."""
        actor.context_base -= self._need(seq) - self.admit_step[seq]

    def _pause(self, actor: _Actor, seq: int) -> None:
        """`seq` leaves this actor unfinished: bank the tokens it generated here."""
        done = actor.steps - self.admit_step[seq]
        self._stop(actor, seq)
        self.seq_tokens[seq] += done
        self.done_before[seq] += done

    def _advance(self, a: int, steps: int, end: float | None = None) -> bool:
        """Decode `steps` steps (ending at `end` if the caller already knows when), record the
        completions reached, and preempt if the next step would not fit the KV cache. Returns
        whether it preempted."""
        actor = self.actors[a]
        if not actor.running:
            return False
        actor.clock = actor.clock + self._steps_s(actor, steps) if end is None else end
        batch = len(actor.running)
        self.decode_tokens += steps * batch
        actor.seq_steps += steps * batch
        actor.context_read += steps * actor.context + batch * steps * (steps - 1) // 2
        actor.steps += steps
        while actor.running and actor.running[0][0] == actor.steps:
            _, seq = heapq.heappop(actor.running)
            if self.seq_end[seq] == self.seq_end[seq]:  # not NaN: already finished
                raise RuntimeError(f"sequence {seq} finished twice")
            self._stop(actor, seq)
            self.seq_tokens[seq] += actor.steps - self.admit_step[seq]
            self.seq_end[seq] = actor.clock
            actor.finished += 1
        return self._preempt_overflow(actor)

    def _preempt_overflow(self, actor: _Actor) -> bool:
        """Evict the latest admitted sequences until one more step of the rest fits the KV cache
        (the last one running always stays). Returns whether it evicted any."""
        cap = self.profile.kv_capacity_tokens
        victims: list[int] = []
        while cap is not None and len(actor.running) - len(victims) > 1:
            running = len(actor.running) - len(victims)
            if actor.context_base + running * actor.steps + running <= cap:
                break
            left = [s for _, s in actor.running if s not in victims]
            victim = max(left, key=lambda s: self.admit_order[s])
            self._pause(actor, victim)
            victims.append(victim)
        if not victims:
            return False
        actor.running = [(f, s) for f, s in actor.running if s not in victims]
        heapq.heapify(actor.running)
        actor.queue.extendleft(victims)  # each evicted one goes to the front, as in vLLM
        self.preempted += len(victims)
        return True

    def _catch_up(self, b: int, until: float) -> None:
        """Advance actor `b` to its first step boundary at or after `until` (short of its next
        event), so that work handed to it starts no earlier than it was handed over."""
        target = self.actors[b]
        if target.running and until > target.clock:
            limit = self._steps_to_event(b)
            wait = until - target.clock
            steps = bisect.bisect_left(
                range(limit + 1), wait - 1e-12, key=lambda m: self._steps_s(target, m)
            )
            self._advance(b, min(steps, limit))
        target.clock = max(target.clock, until)

    def _schedule(self, a: int) -> None:
        actor = self.actors[a]
        actor.epoch += 1
        if actor.running:
            steps = self._steps_to_event(a)
            t = actor.clock + self._steps_s(actor, steps)
            heapq.heappush(self.events, (t, a, actor.epoch, steps))
        elif actor.end_s is None:
            actor.end_s = actor.clock

    # -- cut-and-migrate -----------------------------------------------------------------------

    def _free_slots(self, b: int, per_seq_tokens: float) -> int:
        """How many sequences of `per_seq_tokens` context actor `b` can take now."""
        other = self.actors[b]
        slots = self.profile.max_batch - len(other.running) - len(other.queue)
        if self.profile.kv_capacity_tokens is not None:
            room = self._kv_room(other) - sum(self._need(s) + 1 for s in other.queue)
            slots = min(slots, int(room // per_seq_tokens))
        return max(0, slots)

    def _maybe_cut(self, a: int) -> None:
        actor = self.actors[a]
        if self.tau is None or actor.cut or actor.received:
            return
        if not should_cut(actor.finished, actor.total, self.tau):
            return
        remaining = [seq for _, seq in actor.running] + list(actor.queue)
        per_seq = 1 + np.mean(
            [self._need(s) + actor.steps - self.admit_step[s] for _, s in actor.running]
            + [self._need(s) for s in actor.queue]
        )
        free = {
            b: self._free_slots(b, per_seq)
            for b, other in enumerate(self.actors)
            if b != a and other.active and not other.cut
        }
        if sum(free.values()) < len(remaining):
            return  # the tail does not fit elsewhere yet: keep decoding it here
        moves = plan_moves({a: remaining}, free)
        for seq in (s for _, s in actor.running):
            self._pause(actor, seq)
        actor.running, actor.queue, actor.context_base = [], deque(), 0
        actor.cut, actor.end_s = True, actor.clock
        self.cuts += 1
        self.moved += len(moves)
        by_target: dict[int, list[int]] = {}
        for seq, _, target in moves:
            by_target.setdefault(target, []).append(seq)
        for b, seqs in sorted(by_target.items()):
            target = self.actors[b]
            self._catch_up(b, actor.clock)
            target.queue.extend(seqs)
            target.total += len(seqs)
            target.received = True
            self._admit(b)
            self._schedule(b)


def simulate_generation(
    assignment: list[list[int]],
    batch: TokenBatch,
    profile: TimeProfile,
    dedup: bool,
    tau: float | None,
) -> GenerationResult:
    """Run one generation phase; `assignment[i]` lists the groups actor i holds, in admission
    order. `tau=None` turns cut-and-migrate off."""
    return _Generation(assignment, batch, profile, dedup, tau).run()


def generation_floor_s(batch: TokenBatch, profile: TimeProfile) -> float:
    """A lower bound on the generation phase on this profile: its slowest sequence prefilled and
    decoded alone, in a batch of one. No assignment, scaling or migration can beat it."""
    prompts = batch.prompt_tokens + batch.prefix_tokens
    longest = batch.lengths.max(axis=1)
    return max(
        prompt * profile.prefill_s_per_token + profile.decode_steps_s(1, prompt, length)
        for prompt, length in zip(prompts.tolist(), longest.tolist(), strict=True)
    )
