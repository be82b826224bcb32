"""The instruction-following judge: every IFEval instruction of a sample must hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rlguard.judges.base import Judge, Metadata, Verdict, failed, require, satisfied, violated
from rlguard.judges.instructions.args import BadKwargs
from rlguard.judges.instructions.registry import UnknownInstruction, check_instruction


class InstructionJudge(Judge):
    """CGPO's instruction-following judge over IFEval metadata, offline and deterministic.

    Metadata is an IFEval row: `instruction_id_list` and the aligned `kwargs` list. The verdict is
    IFEval's strict accuracy: satisfied only if every instruction holds; the reason of a violation
    names the first failing id. Any unknown id or bad kwargs make the whole sample a judge failure,
    even when another instruction is violated, so broken data stays visible.
    """

    name = "instructions"

    def check(self, prompt: str, completion: str, metadata: Metadata) -> Verdict:
        ids = require(metadata, "instruction_id_list")
        all_kwargs = require(metadata, "kwargs")
        if not _is_list(ids) or not all(isinstance(i, str) for i in ids):
            return failed(f"instruction_id_list must be a list of ids, got {ids!r}")
        if not _is_list(all_kwargs) or len(all_kwargs) != len(ids):
            return failed(f"kwargs must be a list aligned with the {len(ids)} instruction ids")
        first_violation = None
        for instruction_id, kwargs in zip(ids, all_kwargs, strict=True):
            try:
                reason = check_instruction(instruction_id, completion, kwargs)
            except (UnknownInstruction, BadKwargs) as exc:
                return failed(str(exc))
            if reason is not None and first_violation is None:
                first_violation = f"{instruction_id}: {reason}"
        if first_violation is not None:
            return violated(first_violation)
        return satisfied(f"all {len(ids)} instructions hold")


def _is_list(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes | Mapping)
