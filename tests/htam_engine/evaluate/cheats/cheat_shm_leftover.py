"""Cheat (red-team pass 23; memory kept from later evaluations): an honest Triton ReLU that, on
import, writes files into /dev/shm, which every sandbox may write (Python's multiprocessing
semaphores live there). RLIMIT_FSIZE bounds one file, not their number, and a tmpfs file's pages
belong to no process: no sandbox's resident size or address-space limit counts them. Before the
zygote swept them (shm_sweep), six files of 256 MB outlived the sandbox and kept 1.5 GB of the
box's memory from every later evaluation. Here three of 8 MB, named so the test can find them."""

import secrets

_block = b"\1" * (1 << 20)
for _ in range(3):
    with open(f"/dev/shm/htam-test-shm-left-{secrets.token_hex(4)}", "wb") as fh:
        for _ in range(8):
            fh.write(_block)

# include: honest_relu_triton
