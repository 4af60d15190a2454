"""Cheat (memory that outlives the sandbox through System V shared memory): segments made with
shmget(IPC_PRIVATE), each attached, filled and detached again and never removed. They belong to
no process, so no sweep of /dev/shm sees them, and the address-space limit sees one at a time:
18 of 256 MB kept 4.6 GB of the host after the judge was gone, until a reboot (4 of 8 MB here).
The kernel is an honest softmax.

Class: memory later evaluations need; red-team pass 26."""
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
SEGMENT = 8 << 20
for _ in range(4):
    made = libc.shmget(0, SEGMENT, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if made < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), "shmget")
    address = libc.shmat(made, None, 0)
    ctypes.memset(address, 1, SEGMENT)  # its pages exist now
    libc.shmdt(ctypes.c_void_p(address))  # no IPC_RMID: it stays

# include: honest_softmax
