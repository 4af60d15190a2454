"""Session files and operations: save/load (atomic, versioned), branch, resume, export, list.

Records are in session/model.py; serialization in session/codec.py; storage in session/store.py.
"""

from htam_engine.session.model import (
    Action, Candidate, Decider, Decision, Policy, ProblemRef, Session, SessionConfig, StepRecord,
)
from htam_engine.session.ops import (
    SessionError, StepRangeError, branch_session, candidate_code, export_best, history_of, list_sessions,
    memory_at, new_session, record_step, step_decision, step_speedup, step_status, summarize,
)
from htam_engine.session.paths import SESSION_SUFFIX, sessions_dir
from htam_engine.session.store import FORMAT_VERSION, SessionFileError, load_session, read_meta, save_session

__all__ = [
    "FORMAT_VERSION", "SESSION_SUFFIX", "Action", "Candidate", "Decider", "Decision", "Policy", "ProblemRef", "Session", "SessionConfig",
    "SessionError", "SessionFileError", "StepRangeError", "StepRecord", "branch_session", "candidate_code",
    "export_best", "history_of", "list_sessions", "load_session", "memory_at", "new_session", "read_meta",
    "record_step", "save_session", "sessions_dir", "step_decision", "step_speedup", "step_status", "summarize",
]
