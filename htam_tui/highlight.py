"""C++/CUDA highlighting for Textual's TextArea: the tree-sitter-cpp grammar with the
tree-sitter-c highlight query (the cpp package's own query only adds to the C one).
Keywords CUDA adds (__global__, __shared__ ...) parse as identifiers/attributes and stay plain.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from textual.widgets import TextArea

CPP = "cpp"


@lru_cache(maxsize=1)
def cpp_language():
    """(Language, highlight query) or None where the grammar packages are missing."""
    try:
        import tree_sitter_c
        import tree_sitter_cpp
        from tree_sitter import Language, Query
    except ImportError:
        return None
    language = Language(tree_sitter_cpp.language())
    c_query = resources.files(tree_sitter_c).joinpath("queries/highlights.scm").read_text()
    cpp_query = resources.files(tree_sitter_cpp).joinpath("queries/highlights.scm").read_text()
    for query in (c_query + "\n" + cpp_query, c_query):
        try:
            Query(language, query)  # validate against the cpp grammar before handing it over
        except Exception:  # noqa: BLE001 - an invalid combined query falls back to the C query
            continue
        return language, query
    return None


def register_cpp(area: TextArea) -> bool:
    found = cpp_language()
    if found is None:
        return False
    area.register_language(CPP, found[0], found[1])
    return True
