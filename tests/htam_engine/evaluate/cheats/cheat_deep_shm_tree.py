"""Cheat (memory the sweep could not walk): cheat_deep_private_tree's chain of 4,000 folders in a
folder of /dev/shm, beside files no process holds (4 of 256 MB then, 3 of 8 MB here). The sweep's
os.walk raised RecursionError (Python 3.11) before it removed anything, the zygote died, and the
files stayed after the judge was gone: never swept later, since every later fork notes the folder
as there before it.

Class: memory later evaluations need; red-team pass 27."""
import os
import tempfile

# include: part_deep_chain
_top = tempfile.mkdtemp(prefix="htam-test-deep-", dir="/dev/shm")
_kept = os.open(_top, os.O_RDONLY)  # held while it lives: another judge's sweep leaves it alone
for _i in range(3):
    with open(os.path.join(_top, f"block{_i}"), "wb") as _f:
        _f.write(b"\1" * (8 << 20))
deep_chain(_top)

# include: honest_softmax
