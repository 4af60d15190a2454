"""Cheat: cheat_output_ring_numpy with a ring of 32, past the 16 foreign outputs the sandbox keeps alive
(memory.HeldOutputs then; the untimed warm-ups take turns too): the memory handed out again
is that of an output dropped from the record long before. A caller holding an output sees it
overwritten 32 calls later.

Class: outputs that alias memory the model keeps, behind a fresh storage each call."""

# include: cheat_output_ring_numpy

RING = 32  # past the 16 outputs the sandbox once kept alive, warm-ups' turns between them
