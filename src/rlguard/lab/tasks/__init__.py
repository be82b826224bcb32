"""The lab's four tasks: precise judges for math, code and instructions; only a rubric for chat."""

from rlguard.lab.tasks.arithmetic import Arithmetic
from rlguard.lab.tasks.base import Row, WorldTask
from rlguard.lab.tasks.chat import Chat
from rlguard.lab.tasks.functions import Functions
from rlguard.lab.tasks.instructions import Instructions

TASKS: dict[str, WorldTask] = {
    t.name: t for t in (Arithmetic(), Functions(), Instructions(), Chat())
}

__all__ = ["TASKS", "Row", "WorldTask"]
