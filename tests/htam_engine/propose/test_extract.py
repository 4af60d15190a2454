"""The candidate module is found in the replies models really give."""

from __future__ import annotations

import pytest

from htam_engine.propose.extract import extract_module

MODULE = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


@pytest.mark.parametrize(
    "reply",
    [
        f"```python\n{MODULE}```",
        f"```\n{MODULE}```",
        f"```py\n{MODULE}```\n",
        f"~~~python\n{MODULE}~~~\n",
        f"Sure! Here is a faster version.\n\n```python\n{MODULE}```\n\nThis fuses the two passes.",
        f"````python\n{MODULE}````",
        f"  ```python\n{MODULE}  ```\n",
        MODULE,
        f"The module follows.\n\n{MODULE}\nThat is the whole module; it avoids a second pass.",
        f"<think>\nMaybe:\n```python\nclass ModelNew: pass\n```\n</think>\nFinal answer:\n```python\n{MODULE}```",
    ],
    ids=["tagged", "untagged", "py", "tilde", "prose", "four-backticks", "indented-fence", "bare", "bare-with-prose", "think-draft"],
)
def test_module_is_found(reply):
    found = extract_module(reply)
    assert found.failure == ""
    assert found.code is not None and found.code.strip() == MODULE.strip()


def test_several_blocks_pick_the_one_defining_modelnew():
    reply = f"First the kernel:\n```cpp\n__global__ void k() {{}}\n```\nThen a test:\n```python\nprint(1)\n```\nAnd the module:\n```python\n{MODULE}```"
    assert extract_module(reply).code == MODULE


def test_later_revision_wins_over_an_earlier_draft():
    draft = MODULE.replace("return x", "return x * 1")
    found = extract_module(f"Draft:\n```python\n{draft}```\nFixed:\n```python\n{MODULE}```")
    assert found.code == MODULE and found.blocks == 2


def test_split_module_joins_the_block_that_defines_its_source_string():
    source_block = 'cuda_src = """\n__global__ void k() {}\n"""\n'
    module = "import torch\nfrom torch.utils.cpp_extension import load_inline\next = load_inline('k', cpp_sources='', cuda_sources=cuda_src)\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
    found = extract_module(f"```python\n{source_block}```\nthen\n```python\n{module}```")
    assert found.code is not None and found.code.startswith("cuda_src") and found.code.endswith(module)


def test_unclosed_fence_of_a_complete_module_is_accepted():
    found = extract_module(f"```python\n{MODULE}")
    assert found.code == MODULE


def test_reply_cut_inside_the_block_is_a_clear_failure():
    found = extract_module("```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(")
    assert found.code is None
    assert found.failure.startswith("the reply was cut off inside the code block") and "syntax error at line 4" in found.failure


@pytest.mark.parametrize(
    "reply, fragment",
    [
        ("", "empty reply"),
        ("   \n", "empty reply"),
        ("I cannot help with that.", "contains no code"),
        ("```python\nimport torch\nclass Model(torch.nn.Module):\n    pass\n```", "no code block defines class ModelNew (blocks: 1, languages: python)"),
        ("```python\nclass ModelNew(nn.Module)\n    pass\n```", "syntax error at line 1"),
        ("```cuda\n__global__ void k() {}\n```", "languages: cuda"),
    ],
)
def test_no_usable_module_gives_a_reason(reply, fragment):
    found = extract_module(reply)
    assert found.code is None and fragment in found.failure and "\n" not in found.failure


def test_separate_source_blocks_are_bound_to_the_names_the_module_loads():
    module = (
        "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
        "ext = load_inline('k', cpp_sources=cpp_src, cuda_sources=cuda_src, functions=['run'])\n\n\n"
        "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return ext.run(x)\n"
    )
    cuda = '#include <cuda_runtime.h>\n__global__ void k(float* p) { p[0] = 1.0f; }\ntorch::Tensor run(torch::Tensor x) { return x; }\n'
    cpp = "torch::Tensor run(torch::Tensor x);\n"
    found = extract_module(f"Kernel:\n```cuda\n{cuda}```\nDeclaration:\n```cpp\n{cpp}```\nModule:\n```python\n{module}```")
    assert found.code is not None and found.code.endswith(module)
    namespace: dict = {}
    exec(found.code.split("\n\nimport torch")[0], namespace)  # the bindings alone
    assert namespace["cuda_src"] == "\n" + cuda and namespace["cpp_src"] == "\n" + cpp


def test_source_blocks_that_do_not_match_the_names_are_left_alone():
    module = "import torch\next = load(kernel_code, other_code)\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
    found = extract_module(f"```cuda\n__global__ void k() {{}}\n```\n```python\n{module}```")
    assert found.code == module
