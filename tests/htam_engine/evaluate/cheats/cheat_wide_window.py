"""Cheat (red-team pass 24; work before the clock): the judge read the sandbox's per-thread CPU
figures from /proc (a file per thread) between writing a run's inputs and sending its Go, so 3,000
idle threads made that gap ~90 ms. A watcher thread spots new inputs in the shared buffers and
wakes a compute thread that does the product in numpy (no ATen operator) while the judge is still
reading; forward only checks the inputs against its copies and runs the C++ ReLU on the product.
Ok at 1.6-2.0x in 3 of 5 evaluations on matmul_relu against the same code's honest 0.8x. The
judge now reads its figures before writing the inputs (channel.call_run): the product falls in
the clocked run, on a second thread (global_setting).

Class: work moved off the clock (a helper thread working before the Go)."""

# include: honest_relu_cpp

import _thread
import time

import numpy as np

IDLE = 3000


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.slots, self.ready, self.last, self.armed = {}, {}, 0.0, False
        self.go = _thread.allocate_lock()
        self.go.acquire()
        _thread.start_new_thread(self.watch, ())
        gate = _thread.allocate_lock()
        gate.acquire()
        self._gate = gate
        _thread.stack_size(64 * 1024)
        for _ in range(IDLE):
            _thread.start_new_thread(gate.acquire, ())
        _thread.stack_size(0)
        _thread.start_new_thread(self.compute, ())

    def watch(self):
        while True:
            time.sleep(0.0005)
            if self.armed or time.monotonic() - self.last < 0.03:
                time.sleep(0.01)  # a run is under way (or its inputs are handled): stay quiet
                continue
            for key, (a, b) in list(self.slots.items()):
                old = self.ready.get(key)
                if old is None or old[0] != (a[0, 0], a[-1, -1], b[0, 7], b[-1, -1]):
                    self.armed = True
                    self.go.release()
                    break

    def compute(self):
        while True:
            self.go.acquire()
            time.sleep(0.003)  # let the judge finish writing the run's inputs
            for key, (a, b) in list(self.slots.items()):
                probe = (a[0, 0], a[-1, -1], b[0, 7], b[-1, -1])
                old = self.ready.get(key)
                if old is None or old[0] != probe:
                    ac, bc = a.copy(), b.copy()
                    self.ready[key] = (probe, ac, bc, np.matmul(ac, bc))

    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
        if not a.untyped_storage().resizable():  # the shared buffers: remember them for the watcher
            self.last, self.armed = time.monotonic(), False
            view = self.slots.pop(key, None) or (a.numpy(), b.numpy())
            self.slots[key] = view
            while len(self.slots) > 5:
                self.slots.pop(next(iter(self.slots)))
        r = self.ready.get(key)
        an, bn = self.slots.get(key, (None, None))
        if r is not None and r[1] is not None and np.array_equal(r[1], an) and np.array_equal(r[2], bn):
            p = torch.from_numpy(r[3])
        else:
            p = a @ b
            if an is not None:
                self.ready[key] = ((an[0, 0], an[-1, -1], bn[0, 7], bn[-1, -1]), None, None, None)
        return relu_ext.relu_forward(p)
