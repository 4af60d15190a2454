"""`htam sessions list|show|branch|export|resume`: session files from the command line."""

from __future__ import annotations

import argparse
import importlib.util
import time
from typing import Any

from htam_engine.errors import UsageError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("sessions", help="list, show, branch, export or resume session files",
                              description=__doc__)
    sub = p.add_subparsers(dest="sessions_command", metavar="{list,show,branch,export,resume}")
    sub.required = True

    ls = sub.add_parser("list", help="sessions in a folder (default sessions/ or $HTAM_SESSIONS_DIR)")
    ls.add_argument("dir", nargs="?", help="folder of session files")
    ls.add_argument("--json", action="store_true", help="print one JSON document")
    ls.set_defaults(handler=handle_list)

    sh = sub.add_parser("show", help="one session: steps, directions, results, best")
    sh.add_argument("session", help="session file")
    sh.add_argument("--json", action="store_true", help="print the session summary as one JSON document")
    sh.set_defaults(handler=handle_show)

    br = sub.add_parser("branch", help="new session keeping steps 1..STEP and the memory as after STEP")
    br.add_argument("session", help="session file")
    br.add_argument("--at", type=int, required=True, metavar="STEP", help="last step to keep (0 keeps none)")
    br.add_argument("--to", metavar="FILE", help="new session file (default: next to the original)")
    br.add_argument("--json", action="store_true", help="print {session, path, parent} as JSON")
    br.set_defaults(handler=handle_branch)

    ex = sub.add_parser("export", help="write the best candidate as a KernelBench-format solution file")
    ex.add_argument("session", help="session file")
    ex.add_argument("--to", metavar="FILE", help="solution file (default sessions/<session>.solution.py)")
    ex.add_argument("--json", action="store_true", help="print {path, best} as JSON")
    ex.set_defaults(handler=handle_export)

    rs = sub.add_parser("resume", help="continue a session headless (same as htam run --resume)")
    rs.add_argument("session", help="session file")
    rs.add_argument("--steps", type=int, help="steps this invocation runs")
    rs.add_argument("--json", action="store_true", help="print the session summary as one JSON document")
    rs.set_defaults(handler=handle_resume)


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"


def _speed(x: float | None) -> str:
    return f"{x:.2f}x" if isinstance(x, (int, float)) else "-"


def handle_list(args: argparse.Namespace) -> int:
    from htam_engine.session import list_sessions, sessions_dir

    folder = args.dir or str(sessions_dir())
    rows = list_sessions(folder)
    if args.json:
        from htam_engine.cli import print_json

        print_json({"dir": folder, "sessions": rows})
        return 0
    if not rows:
        print(f"no sessions in {folder}")
        return 0
    print(f"{'FILE':<44} {'PROBLEM':<32} {'STEPS':>5} {'BEST':>7}  LAST CHANGE")
    for r in rows:
        name = r["path"].rsplit("/", 1)[-1]
        if "error" in r:
            print(f"{name:<44} unreadable: {r['error']}")
            continue
        print(f"{name:<44} {str(r['problem'])[:32]:<32} {r['steps']:>5} {_speed(r['best_speedup']):>7}  "
              f"{_when(r['updated_at'])}")
    return 0


def handle_show(args: argparse.Namespace) -> int:
    from htam_engine.session import load_session, summarize

    s = load_session(args.session)
    doc = summarize(s, args.session)
    if args.json:
        from htam_engine.cli import print_json

        print_json(doc)
        return 0
    c = s.config
    print(f"session {s.id}  problem {s.problem.id}  backend {c.backend} on {c.device}  proposer {c.proposer}"
          f"{' ' + c.model if c.model else ''}  policy {c.policy}")
    if s.parent:
        print(f"branched from {s.parent.get('session')} at step {s.parent.get('step')}")
    print(f"{'STEP':>4}  {'DIRECTION':<26} {'STATUS':<14} {'SPEEDUP':>8} {'REWARD':>7} {'BEST':>7}  DECISION")
    for st in doc["steps"]:
        dec = f"{st['decision']} by {st['decided_by']}" if st["decision"] else (st["failure"] or "-")[:40]
        dec += f": {st['decision_reason']}" if st["decision_reason"] else ""
        shown = st["speedup_eager"] if st["status"] == "ok" else None  # a failed result's timing is no speedup
        print(f"{st['step']:>4}  {st['direction'] or '-':<26} {st['status']:<14} {_speed(shown):>8} "
              f"{st['reward']:>+7.3f} {_speed(st['best_speedup']):>7}  {dec}")
    best = doc["best"]
    if best:
        print(f"best: step {s.best_step}, speedup vs eager {_speed(best['speedup_eager'])}, "
              f"vs torch.compile {_speed(best['speedup_compile'])}, {best['runtime_ms']} ms")
    else:
        print("best: no correct candidate yet")
    return 0


def handle_branch(args: argparse.Namespace) -> int:
    from htam_engine.session import branch_session, read_meta

    if args.at < 0:
        raise UsageError("--at must be >= 0")
    dest = branch_session(args.session, args.at, args.to)
    meta = read_meta(dest)
    if args.json:
        from htam_engine.cli import print_json

        print_json({"session": meta.get("session"), "path": str(dest), "parent": meta.get("parent")})
    else:
        print(f"branched {args.session} at step {args.at} -> {dest}")
    return 0


def handle_export(args: argparse.Namespace) -> int:
    from htam_engine.session import export_best, load_session

    s = load_session(args.session)
    dest = export_best(s, args.to)
    if args.json:
        from htam_engine.cli import print_json

        print_json({"path": str(dest), "session": s.id, "step": s.best_step,
                    "best": s.best_result.to_dict() if s.best_result else None})
    else:
        print(f"exported step {s.best_step} of {s.id} -> {dest}")
    return 0


def handle_resume(args: argparse.Namespace) -> int:
    """Hands over to `htam run --resume` (the loop's command), which owns headless runs."""
    if importlib.util.find_spec("htam_engine.cli.run_cmd") is None:
        raise RuntimeError("resuming needs the run command (htam_engine.cli.run_cmd), which this installation lacks")
    from htam_engine.cli import build_parser

    argv = ["run", "--resume", args.session]
    if args.steps is not None:
        argv += ["--steps", str(args.steps)]
    if args.json:
        argv.append("--json")
    run_args = build_parser().parse_args(argv)
    return int(run_args.handler(run_args) or 0)
