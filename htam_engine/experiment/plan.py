"""What an ablation experiment runs, and the record each run leaves.

An experiment runs every test problem under every arm, seed and starting memory; a run is one
headless session of `steps` steps. "cold" runs start from the seed memory; "warm" runs start
from a bank learned by the full method on a disjoint set of bank problems (the paper's
memory initialised from KernelBench runs). Every run starts from its memory afresh: runs do
not learn from each other, so they are independent samples.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from htam_engine.errors import UsageError
from htam_engine.loop.engine import ABLATIONS
from htam_engine.memory.select import SelectConfig


class Arm(str, Enum):
    """The full method and the ablations compared against it."""

    FULL = "full"
    RANDOM = "random"
    FLAT = "flat"
    NO_PREFIX = "no-prefix"
    NO_POSITION = "no-position"
    NO_UPDATE = "no-update"

    @property
    def ablation(self) -> str | None:
        """The session's --ablation value."""
        return None if self is Arm.FULL else self.value


assert all(a.ablation in ABLATIONS for a in Arm if a.ablation), "every arm is an engine ablation"


class Start(str, Enum):
    """The memory a run starts from."""

    COLD = "cold"  # the seed schema
    WARM = "warm"  # a bank learned on the bank problems


@dataclass(frozen=True, slots=True)
class RunKey:
    problem: str
    arm: Arm
    seed: int
    start: Start

    def text(self) -> str:
        return f"{self.start.value}/{self.arm.value}/{self.seed}/{self.problem}"


@dataclass(slots=True)
class ExperimentSpec:
    test: list[str]  # problem ids the arms are compared on
    bank: list[str]  # problem ids the warm bank is learned on; disjoint from test
    arms: list[Arm] = field(default_factory=lambda: list(Arm))
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    starts: list[Start] = field(default_factory=lambda: list(Start))
    steps: int = 6
    backend: str = "triton"
    device: str = "cuda"
    bank_seed: int = 0  # seed of the (first) sessions that learn the warm bank
    bank_seeds: int = 1  # sessions per bank problem, seeds bank_seed, bank_seed + 1, ...
    bank_arm: Arm = Arm.FULL  # how the bank sessions choose (random explores more of each family)
    select: dict[str, float] = field(default_factory=dict)  # SelectConfig settings other than the defaults

    def check(self) -> None:
        if not self.test:
            raise UsageError("the experiment has no test problems")
        both = sorted(set(self.test) & set(self.bank))
        if both:
            raise UsageError(f"test and bank problems overlap ({', '.join(both[:5])}): a warm bank must be "
                             "learned on other problems")
        if Start.WARM in self.starts and not self.bank:
            raise UsageError("warm runs need bank problems to learn the bank on")
        if Arm.FULL not in self.arms:
            raise UsageError("the arms must include the full method (every arm is compared with it)")
        if self.bank_seeds < 1:
            raise UsageError("the bank needs at least one session per bank problem")
        if self.steps < 1 or not self.seeds:
            raise UsageError("an experiment needs at least one step and one seed")
        if len(set(self.test)) != len(self.test) or len(set(self.bank)) != len(self.bank):
            raise UsageError("a problem is listed twice")
        try:
            self.select_config(Arm.FULL)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"bad selection settings {self.select}: {exc}") from None

    def select_config(self, arm: Arm) -> SelectConfig:
        return SelectConfig(ablation=arm.ablation, **self.select)

    def keys(self) -> list[RunKey]:
        """Every run, cold before warm and seed by seed, so a deadline leaves whole (problem, seed) groups."""
        return [RunKey(p, a, s, st) for st in self.starts for s in self.seeds for p in self.test for a in self.arms]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["arms"] = [a.value for a in self.arms]
        d["starts"] = [s.value for s in self.starts]
        d["bank_arm"] = self.bank_arm.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ExperimentSpec":
        return cls(**{**d, "arms": [Arm(a) for a in d["arms"]], "starts": [Start(s) for s in d["starts"]],
                      "bank_arm": Arm(d.get("bank_arm", Arm.FULL.value))})

    def bank_keys(self) -> list[RunKey]:
        """The sessions the warm bank is learned from, problem by problem."""
        return [RunKey(p, self.bank_arm, self.bank_seed + i, Start.COLD) for p in self.bank
                for i in range(self.bank_seeds)]


# A step's status in replay mode when its candidate was not in the evaluation table: it counts as a
# failed step (the search went on), but no GPU ever judged it, so the statistics can leave its
# (problem, seed) out for every arm (stats.measured_only).
UNMEASURED = "unmeasured"


@dataclass(slots=True)
class StepRow:
    """One step of a run, as the statistics need it."""

    step: int
    direction: str
    mode: str  # the selection mode: argmax, random, flat, ...
    template: str | None
    code_hash: str | None  # the evaluated candidate (None: no candidate)
    status: str  # the outcome's evaluation status, or failed / vetoed / skipped, or UNMEASURED
    speedup: float | None  # the outcome's speedup over eager when correct
    best: float | None  # the run's best correct speedup after this step


@dataclass(slots=True)
class RunRecord:
    key: RunKey
    family: str
    steps: list[StepRow]
    finish: str = ""
    wall_s: float = 0.0
    error: str = ""  # the run broke outside its steps; it is left out of the statistics

    def best_after(self, k: int) -> float | None:
        """The best correct speedup after step k (the last recorded step's if the run is shorter)."""
        rows = [r for r in self.steps if r.step <= k]
        return rows[-1].best if rows else None

    def to_dict(self) -> dict[str, Any]:
        return {"key": {"problem": self.key.problem, "arm": self.key.arm.value, "seed": self.key.seed,
                        "start": self.key.start.value},
                "family": self.family, "steps": [asdict(s) for s in self.steps], "finish": self.finish,
                "wall_s": self.wall_s, "error": self.error}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunRecord":
        k = d["key"]
        return cls(key=RunKey(k["problem"], Arm(k["arm"]), int(k["seed"]), Start(k["start"])), family=d["family"],
                   steps=[StepRow(**s) for s in d["steps"]], finish=d.get("finish", ""),
                   wall_s=float(d.get("wall_s", 0.0)), error=d.get("error", ""))
