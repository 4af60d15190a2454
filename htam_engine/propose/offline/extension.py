"""The load_inline emitter: the Python that builds a generated C++ or CUDA extension.

The kernel generators (cpp.py, cuda.py) write sources; this module writes the
`load_inline(...)` call a candidate module runs at import, naming the extension by a hash
of everything that goes into the build (so equal sources share one cached build and
different ones never collide).
"""

from __future__ import annotations

import hashlib

from htam_engine.propose.offline.cpp import CppSources
from htam_engine.propose.offline.cuda import CFLAGS as CUDA_HOST_CFLAGS
from htam_engine.propose.offline.cuda import PREFIX, CudaSources


def extension_name(text: str) -> str:
    return "htam_offline_" + hashlib.sha256(text.encode()).hexdigest()[:16]


def cpp_extension(src: CppSources) -> str:
    name = extension_name(src.text + repr(src.flags))
    code = [
        "from torch.utils.cpp_extension import load_inline",
        "",
        f"_CPP_SOURCE = r'''\n{src.text}'''",
        "",
        "_ext = load_inline(",
        f"    name={name!r},",
        "    cpp_sources=_CPP_SOURCE,",
        f"    functions={src.functions!r},",
        f"    extra_cflags={src.flags!r},",
        "    verbose=False,",
        ")",
    ]
    return "\n".join(code) + "\n"


def cuda_extension(src: CudaSources) -> str:
    """The split layout: nvcc builds the .cu unit (CUDA headers only), the host compiler the torch
    wrappers; launcher symbols carry a hash of the .cu text so two candidates' never meet."""
    prefix = extension_name(src.cuda_text).removeprefix("htam_offline_")
    cuda_text = src.cuda_text.replace(PREFIX, f"htam_{prefix}_")
    cpp_text = src.cpp_text.replace(PREFIX, f"htam_{prefix}_")
    name = extension_name(cuda_text + cpp_text + repr(src.cuda_flags))
    code = [
        "from torch.utils.cpp_extension import load_inline",
        "",
        f"_CPP_SOURCE = r'''\n{cpp_text}'''",
        "",
        f"_CUDA_SOURCE = r'''\n{cuda_text}'''",
        "",
        "_ext = load_inline(",
        f"    name={name!r},",
        "    cpp_sources=_CPP_SOURCE,",
        "    cuda_sources=_CUDA_SOURCE,",
        f"    functions={src.functions!r},",
        f"    extra_cflags={CUDA_HOST_CFLAGS!r},",
        f"    extra_cuda_cflags={src.cuda_flags!r},",
        "    no_implicit_headers=True,",
        "    verbose=False,",
        ")",
    ]
    return "\n".join(code) + "\n"
