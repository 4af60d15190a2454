"""Cheat (a leftover the sweep cannot remove): cheat_shm_leftover's files in /dev/shm, in a folder
whose write bit the candidate took off (chmod is no Landlock right). The sweep's rmtree could not
unlink what is inside a folder it may not write, took the error for "not ours to remove", and
1.5 GB stayed after the sandbox, the judge and every later evaluation (6 files of 256 MB then;
3 of 8 MB here). The kernel is an honest softmax.

Class: memory later evaluations need; red-team pass 26."""
import os

KEEP = f"/dev/shm/htam-test-shm-chmod-{os.getpid()}"
os.makedirs(KEEP, exist_ok=True)
for i in range(3):
    with open(f"{KEEP}/{i}", "wb") as f:
        f.write(b"\1" * (8 << 20))
os.chmod(KEEP, 0o555)

# include: honest_softmax
