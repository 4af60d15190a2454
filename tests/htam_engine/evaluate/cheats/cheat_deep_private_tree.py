"""Cheat (a leftover no cleanup could walk): an honest softmax that, on import, makes a chain of
4,000 nested folders in its scratch folder (TMPDIR, inside the sandbox's private compile folder,
which it may write). The zygote removes that folder when it reaps the sandbox; shutil.rmtree
recursed once a level, raised RecursionError (Python 3.11), and took the zygote down with the
reference and spare sandboxes. The folder stayed, and every later zygote, which removes what a
dead one left, died at its start: every later evaluation on the machine a harness error, until the
folder was removed by hand.

Class: files later evaluations need (shape); red-team pass 27."""
import tempfile

# include: part_deep_chain
deep_chain(tempfile.mkdtemp(prefix="htam-test-deep-"))

# include: honest_softmax
