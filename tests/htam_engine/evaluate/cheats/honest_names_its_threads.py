"""Honest (a GPU driver's habit): at import the candidate starts a thread and names it through
/proc/self/task/<tid>/comm, as NVIDIA's driver names the threads cuInit starts. Where the sandbox
may not, cuInit fails with error 304, and every GPU sandbox died so at its first CUDA use
(evaluate/landlock.py): here the import raises and the evaluation is a compile error."""

import threading

_stop = threading.Event()
_thread = threading.Thread(target=_stop.wait, args=(5,), daemon=True)
_thread.start()
with open(f"/proc/self/task/{_thread.native_id}/comm", "w") as _name:
    _name.write("driver-thread")
_stop.set()
_thread.join()

# include: honest_relu_triton
