"""The evolution loop: the engine, its event bus, approval policies, headless runs and metrics.

    engine = open_engine(RunSpec(problem="relu", steps=3))   # or Engine(problem, config, ...)
    events = engine.events()                                  # any number of consumers
    session = await engine.run()
    await engine.aclose()
"""

from htam_engine.loop.approval import POLICIES, DecisionRequest
from htam_engine.loop.bus import EventBus, Subscription
from htam_engine.loop.engine import ABLATIONS, Engine
from htam_engine.loop.replay import session_events
from htam_engine.loop.setup import RunSpec, open_engine

__all__ = ["ABLATIONS", "POLICIES", "DecisionRequest", "Engine", "EventBus", "RunSpec", "Subscription", "open_engine",
           "session_events"]
