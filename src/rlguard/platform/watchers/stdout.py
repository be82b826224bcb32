"""A job's stdout (a log file), line by line through a regex (RE2's: regex.py).

Named groups `step` and `score` (and optionally `proxy`, `kl`, `loss`); or one unnamed group,
the score, with the step counted: the n-th matching line is step n * step_per_match. Each
group's text is handed on as read: the watcher says when it is not a finite number.
"""

from __future__ import annotations

from pathlib import Path

from rlguard.platform.watchers.files import LineTail, shown
from rlguard.platform.watchers.points import Point, Warn, WatchWarning
from rlguard.platform.watchers.regex import compile_regex


class RegexReader:
    def __init__(
        self,
        job_dir: Path,
        path: str,
        regex: str,
        tags: dict[str, str],
        step_per_match: int,
        warn: Warn,
    ) -> None:
        self.pattern, self.tags, self.warn = compile_regex(regex, "regex"), tags, warn
        self.step_per_match, self.matched = step_per_match, 0
        self.tail = LineTail(job_dir, job_dir / path, path, warn)
        self.path, self.job_dir = job_dir / path, job_dir
        self.seen_tags: set[str] = set()
        self.files_found: set[str] = set()  # what a no-eval warning names

    def poll(self) -> list[Point]:
        if not self.path.exists() and self.tail.inode is None:
            return []  # not written yet: the watcher's no_eval_yet warning covers it
        points: list[Point] = []
        lines = self.tail.lines()
        if self.tail.inode is not None:
            self.files_found.add(self.tail.name)
        for line in lines:
            found = self.pattern.search(line)
            if found is None:
                continue
            self.matched += 1
            named = found.groupdict()
            if "step" in named:
                text = named["step"]
                if text is None or not text.strip().isdigit():
                    where = shown(self.job_dir, self.path)
                    message = f"{where}: step {text!r} is not a step; line skipped"
                    self.warn(WatchWarning("bad_step", message, {"file": where}))
                    continue
                step = int(text)
            else:
                step = self.matched * self.step_per_match
            values = named if named else {"score": found.group(1)}
            for role, text in values.items():
                if role != "step" and text is not None:
                    tag = self.tags.get("eval" if role == "score" else role, role)
                    self.seen_tags.add(tag)
                    points.append(Point(step, tag, text, self.tail.name))
        return points
