"""A job's `watch`: where a framework writes its metrics and checkpoints, read without its help.

Every path is relative to the job's directory (the job's view is its directory): an absolute
path or one with `..` is refused with the field and the value. A `preset` fills the fields a
framework's own logging code decides (presets/*.yaml); the spec's own fields override them.
Errors are pydantic `ValidationError`s whose location is the field, so the API can answer 4xx.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rlguard.platform.watchers.presets import PRESETS, preset_fields
from rlguard.platform.watchers.regex import compile_regex

Source = Literal["tensorboard", "jsonl", "stdout", "trainer_state"]
STEP_FIELD = "{step}"
REGEX_GROUPS = ("step", "score", "proxy", "kl", "loss")


def relative_path(field: str, value: str) -> str:
    """`value` if it stays inside the job directory; otherwise a ValueError naming both."""
    if not value or not value.strip():
        raise ValueError(f"{field} is empty; give a path relative to the job directory")
    if "\\" in value or "\x00" in value:
        raise ValueError(f"{field} {value!r}: backslashes and NUL are refused")
    path = PurePosixPath(value)
    if path.is_absolute() or value.startswith("~"):
        raise ValueError(
            f"{field} {value!r} is absolute; give a path relative to the job directory"
        )
    if ".." in path.parts:
        raise ValueError(f"{field} {value!r} leaves the job directory ('..' is refused)")
    return value


class TotalStepsFrom(BaseModel):
    """Where to read the job's total steps: a tag of the metrics source, or a file.

    `tag`: the last value of a tag (or JSONL field) of the watched source. `file` + `key`: a
    dotted key of a JSON file (HF's `checkpoint-*/trainer_state.json` has `max_steps`; a glob
    takes its newest match). `file` + `regex`: the first group of the first matching line of a
    text file (verl prints "Total training steps: N" to its stdout).
    """

    model_config = ConfigDict(extra="forbid")

    tag: str | None = None
    file: str | None = None
    key: str | None = None
    regex: str | None = None

    @field_validator("file")
    @classmethod
    def _inside(cls, value: str | None) -> str | None:
        return None if value is None else relative_path("total_steps.file", value)

    @field_validator("regex")
    @classmethod
    def _one_group(cls, value: str | None) -> str | None:
        if value is not None and compile_regex(value, "total_steps.regex").groups < 1:
            raise ValueError(f"total_steps.regex {value!r} has no capture group for the number")
        return value

    @model_validator(mode="after")
    def _one_way(self) -> TotalStepsFrom:
        if self.tag is not None:
            if self.file or self.key or self.regex:
                raise ValueError("total_steps: give either tag, or file with key or regex")
        elif self.file is None or (self.key is None) == (self.regex is None):
            raise ValueError("total_steps: give tag, or file with exactly one of key and regex")
        return self


class WatchSpec(BaseModel):
    """What to watch. Tags are matched exactly, or as shell-style patterns when they hold `*`
    (verl's `val-core/<data_source>/<variable>/mean@N` depends on the data set)."""

    model_config = ConfigDict(extra="forbid")

    preset: str | None = Field(None, description="verl | trl | transformers | openrlhf | nemo-rl")
    source: Source
    path: str | None = Field(
        None,
        description="a directory (tensorboard), a file or a glob, job-relative; a stdout watch "
        "without one reads the run's captured stdout and stderr (on the platform)",
    )
    eval_tag: str
    mode: Literal["max", "min"] = "max"
    proxy_tag: str | None = None
    kl_tag: str | None = None
    loss_tag: str | None = None
    # JSONL: the field of each record that holds the step (dotted), and the field that holds
    # the metrics (verl's file logger writes {"step": N, "data": {...}}); None: the record.
    step_key: str = "step"
    metrics_key: str | None = None
    # stdout: named groups step, score (and proxy, kl, loss), or one group (the score) with the
    # step counted: the n-th match is step n * step_per_match.
    regex: str | None = None
    step_per_match: int = Field(1, ge=1)
    total_steps: int | TotalStepsFrom | None = None
    checkpoints: str | None = Field(None, description="a glob with {step}, job-relative")
    checkpoint_ready: str | None = Field(
        None, description="a file inside a checkpoint that exists once it is complete"
    )
    poll_s: float = Field(2.0, gt=0)
    no_eval_warn_polls: int = Field(30, ge=1)
    no_eval_warn_s: float = Field(600.0, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _fill_from_preset(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("preset") is None:
            return data
        name = data["preset"]
        if name not in PRESETS:
            raise ValueError(f"preset {name!r} is unknown; one of {', '.join(sorted(PRESETS))}")
        return preset_fields(name, data.get("source")) | data

    @field_validator("path", "checkpoint_ready")
    @classmethod
    def _inside_job(cls, value: str | None, info) -> str | None:
        return None if value is None else relative_path(info.field_name, value)

    @field_validator("checkpoints")
    @classmethod
    def _step_in_glob(cls, value: str | None) -> str | None:
        if value is None:
            return None
        relative_path("checkpoints", value)
        if value.count(STEP_FIELD) != 1:
            raise ValueError(f"checkpoints {value!r} must hold {STEP_FIELD} exactly once")
        return value

    @field_validator("total_steps")
    @classmethod
    def _positive(cls, value: Any) -> Any:
        if isinstance(value, int) and value < 1:
            raise ValueError(f"total_steps {value!r} must be at least 1")
        return value

    @field_validator("eval_tag", "step_key")
    @classmethod
    def _not_blank(cls, value: str, info) -> str:
        if not value.strip():
            raise ValueError(f"{info.field_name} is empty")
        return value

    @model_validator(mode="after")
    def _source_fields(self) -> WatchSpec:
        if self.path is None and self.source != "stdout":
            raise ValueError(f"path: a {self.source} watch needs a path")
        if self.source == "stdout":
            if self.regex is None:
                raise ValueError("regex: a stdout watch needs a regex with a capture group")
            pattern = compile_regex(self.regex, "regex")
            named = set(pattern.groupindex)
            if pattern.groups == 0:
                raise ValueError(f"regex {self.regex!r} has no capture group for the score")
            unknown = named - set(REGEX_GROUPS)
            if unknown:
                raise ValueError(
                    f"regex {self.regex!r} names groups {sorted(unknown)}; "
                    f"known: {', '.join(REGEX_GROUPS)}"
                )
            if not named and pattern.groups > 1:
                raise ValueError(
                    f"regex {self.regex!r} has {pattern.groups} unnamed groups; name them "
                    "(?P<step>...) and (?P<score>...), or keep one group for the score"
                )
            if named and "score" not in named:
                raise ValueError(f"regex {self.regex!r} names groups but not (?P<score>...)")
            for role in ("proxy", "kl", "loss"):  # a group's values are that role's tag
                if role in named and getattr(self, f"{role}_tag") is None:
                    setattr(self, f"{role}_tag", role)
        elif self.regex is not None:
            raise ValueError(f"regex is for source stdout, not {self.source!r}")
        return self

    @property
    def tags(self) -> dict[str, str]:
        """The role of each watched tag: eval, proxy, kl, loss."""
        roles = {"eval": self.eval_tag, "proxy": self.proxy_tag}
        roles |= {"kl": self.kl_tag, "loss": self.loss_tag}
        return {role: tag for role, tag in roles.items() if tag is not None}
