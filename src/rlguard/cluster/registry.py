"""Names the CLI and experiments use for base schedulers and stop rules."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlguard.cluster.policies.base import Policy
from rlguard.cluster.policies.fifo import Fifo, FifoStrict
from rlguard.cluster.policies.gittins import Gittins
from rlguard.cluster.policies.slaq import Slaq
from rlguard.cluster.policies.srtf import SrtfEst
from rlguard.cluster.policies.themis import Themis
from rlguard.cluster.policies.tiresias import Tiresias
from rlguard.cluster.stopping.base import StopRule
from rlguard.cluster.stopping.competitors import FixedProgress, LossPlateau
from rlguard.cluster.stopping.evalstop import EvalStop
from rlguard.cluster.stopping.gao_drop import GaoDrop
from rlguard.cluster.stopping.gao_trend import GaoTrend
from rlguard.cluster.stopping.patience import EmaPatience, Patience
from rlguard.errors import InputError

BASES: dict[str, Callable[..., Policy]] = {
    "fifo": Fifo,
    "fifo-strict": FifoStrict,
    "srtf-est": SrtfEst,
    "tiresias": Tiresias,
    "gittins": Gittins.default,
    "slaq": Slaq,
    "themis": Themis,
}


def build_policy(name: str, args: Mapping[str, Any] | None = None) -> Policy:
    """The named base policy with its knobs (constructor keywords, e.g. Tiresias' `thresholds`);
    a bad name or knob is one InputError line naming the policy, the field and the value."""
    where = "option --policy-args"
    if name not in BASES:
        raise InputError(f"{where}: unknown policy {name!r} (choose from {', '.join(BASES)})")
    try:
        return BASES[name](**(args or {}))
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(part) for part in err["loc"]) or "arguments"
        msg = err["msg"].removeprefix("Value error, ")
        raise InputError(
            f"{where}: {name}: field {field!r}: {msg} (got {err['input']!r})"
        ) from None
    except (TypeError, ValueError) as e:  # policies that check their knobs by hand
        raise InputError(f"{where}: {name}: {e} (got {dict(args or {})!r})") from None


class RuleParams(BaseModel):
    """Stop-rule knobs exposed on the command line (the rest keep their documented defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int = Field(3, ge=1, description="EvalStop: consecutive declines")
    min_delta: float = Field(0.01, ge=0, description="EvalStop: smallest decline that counts")
    warmup: int = Field(2, ge=0, description="EvalStop: evals recorded before counting")
    patience: int = Field(5, ge=1, description="patience rules: evals without a new best")


RULES: dict[str, Callable[[RuleParams], StopRule | None]] = {
    "none": lambda p: None,
    "evalstop": lambda p: EvalStop(k=p.k, min_delta=p.min_delta, warmup=p.warmup),
    "fixed-progress": lambda p: FixedProgress(),
    "loss-plateau": lambda p: LossPlateau(),
    "patience": lambda p: Patience(patience=p.patience),
    "ema-patience": lambda p: EmaPatience(patience=p.patience),
    GaoTrend.name: lambda p: GaoTrend(),
    GaoDrop.name: lambda p: GaoDrop(),
}
