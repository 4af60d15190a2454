"""What a loaded problem is. The loader (problems/loader.py) builds these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from htam_engine.errors import InputError
from htam_engine.families import Family


class ProblemError(InputError):
    """A problem file that cannot be used; str() is one line naming file and fault."""

    def __init__(self, path: str, fault: str):
        super().__init__(f"{path}: {fault}")
        self.path = path
        self.fault = fault


@dataclass(slots=True)
class TensorSpec:
    shape: list[int]
    dtype: str  # "float32", "int64", "bool", ... ; non-tensors: "int", "float", ...


@dataclass(slots=True)
class Problem:
    id: str  # stable id: "builtin:l1_relu" or "kernelbench:level1/19_ReLU" or a file stem
    name: str
    source: str  # full text of the problem file, unchanged
    path: str | None = None
    level: int | None = None
    family: Family = Family.OTHER
    overrides: dict[str, Any] = field(default_factory=dict)  # --set NAME=VALUE
    inputs: list[TensorSpec] = field(default_factory=list)  # from get_inputs() under overrides
    constants: dict[str, Any] = field(default_factory=dict)  # module-level size constants
    # third-party modules the file imports that this machine lacks: it lists, but cannot run here
    missing_modules: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "path": self.path,
            "level": self.level,
            "family": self.family.value,
            "overrides": dict(self.overrides),
            "inputs": [{"shape": t.shape, "dtype": t.dtype} for t in self.inputs],
            **({"missing_modules": list(self.missing_modules)} if self.missing_modules else {}),
        }
