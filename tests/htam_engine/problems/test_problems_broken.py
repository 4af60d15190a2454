"""A broken problem file gives one line naming the file and the fault, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pathlib import Path

from htam_engine.problems import ProblemError, load_problem

from problems_support import GOOD, problems_cli, write_problem  # noqa: F401 - fixtures


BROKEN = {
    "syntax": ("import torch\nclass Model(:\n    pass\n", "syntax error at line 2"),
    "no_model": (GOOD.replace("class Model(", "class Other("), "missing class Model"),
    "model_not_module": (GOOD + "\nModel = 3\n", "Model is not a subclass of torch.nn.Module"),
    "no_get_inputs": (GOOD.replace("def get_inputs", "def make_inputs"), "missing function get_inputs()"),
    "no_init_inputs": (GOOD.replace("def get_init_inputs", "def init_inputs"), "missing function get_init_inputs()"),
    "inputs_raise": (
        GOOD.replace("return [torch.randn(batch_size, features)]", "raise ValueError('no data here')"),
        "get_inputs() raised ValueError: no data here",
    ),
    "inputs_not_list": (
        GOOD.replace("return [torch.randn(batch_size, features)]", "return torch.randn(batch_size, features)"),
        "get_inputs() returned Tensor, expected a list",
    ),
    "inputs_bad_item": (
        GOOD.replace("return [torch.randn(batch_size, features)]", "return [{'x': 1}]"),
        "get_inputs() item 0 is a dict",
    ),
    "init_not_list": (GOOD.replace("return [features]", "return features"), "get_init_inputs() returned int"),
    "module_raises": (GOOD + "\nraise RuntimeError('broken at import')\n", "module code raised RuntimeError: broken at import"),
    "import_missing_torch_part": (
        "import torch.not_a_module\n" + GOOD,
        "module code raised ModuleNotFoundError",
    ),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_each_broken_kind_is_one_line_naming_file_and_fault(write_problem, kind):
    source, fault = BROKEN[kind]
    path = write_problem(source, f"{kind}.py")
    with pytest.raises(ProblemError) as err:
        load_problem(path)
    message = str(err.value)
    assert message.startswith(path + ": ")
    assert fault in message
    assert "\n" not in message and "Traceback" not in message


def test_missing_file_and_unknown_builtin_are_problem_errors():
    with pytest.raises(ProblemError, match="no such file or built-in problem"):
        load_problem("/nonexistent/problem.py")
    with pytest.raises(ProblemError, match="no such built-in problem"):
        load_problem("builtin:not_a_problem")


def test_missing_third_party_module_still_lists(write_problem):
    path = write_problem("import some_absent_package_xyz\nfrom some_absent_package_xyz.sub import f\n" + GOOD)
    problem = load_problem(path)
    assert problem.missing_modules[0] == "some_absent_package_xyz"
    assert problem.inputs[0].shape == [8, 16]
    assert "some_absent_package_xyz" not in sys.modules


def test_cli_exit_2_when_every_path_fails_and_0_when_some_load(write_problem, problems_cli, capsys):
    bad = write_problem(BROKEN["syntax"][0], "bad.py")
    good = write_problem(GOOD, "good.py")
    assert problems_cli([bad]) == 2
    out = capsys.readouterr()
    assert f"{bad}: syntax error" in out.out and "Traceback" not in out.out + out.err
    assert problems_cli([bad, good]) == 0
    assert problems_cli([str(Path(bad).parent / "empty_folder_that_is_missing")]) == 2


def test_cli_process_prints_no_traceback(write_problem):
    bad = write_problem(BROKEN["inputs_raise"][0], "raises.py")
    run = subprocess.run(
        [sys.executable, "-m", "htam_engine", "problems", bad], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stdout + run.stderr
    assert "get_inputs() raised ValueError: no data here" in run.stdout


def test_a_hanging_file_is_listed_as_broken_not_waited_for(write_problem):
    from htam_engine.problems import discover

    hang = write_problem(GOOD.replace("return [torch.randn(batch_size, features)]", "while True:\n        pass"), "hang.py")
    good = write_problem(GOOD, "fine.py")
    found = discover([hang, good], seconds=0.5)
    assert isinstance(found[0], ProblemError) and "took longer than 0.5 s" in str(found[0])
    assert found[1].inputs[0].shape == [8, 16]


def test_sys_exit_in_a_file_is_a_fault_of_the_file(write_problem):
    with pytest.raises(ProblemError, match="module code raised SystemExit"):
        load_problem(write_problem("import sys\nsys.exit(3)\n" + GOOD))
