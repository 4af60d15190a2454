"""htam engine: problems, evaluation harness, HTG memory, proposers, sessions, loop.

The engine never imports the UI (textual); tests/test_boundaries.py enforces it.
"""

__version__ = "0.1.0"
