"""Part: the gap that tells a run's later calls from lone ones by their pace."""

import time

# A call this soon after the last one returned is a later call of a run. Within a Go the sandbox
# starts the next call 0.15-0.8 ms after the last returned on a loaded 2-core box, and a Go's first call
# comes 1 ms or more after the warm-up; at 0.3 ms the cheat took its shortcut on one later call in
# seven there and went unseen (ok) about one evaluation in three. At 1 ms it sometimes takes a lone
# call for a later one, and is then wrong on a checked set of its own.
RUN_GAP_S = 0.001
