"""`tutor check` and `tutor sandbox run|serve|acl|doctor`: the code sandbox from the command line.

Results come back typed (bot.sandbox.protocol.RunResult); what is printed is the same JSON
and text as always.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _read_source(path: str):
    """(the file's text, None), or (None, a `refused` result saying why it cannot be
    Python). Read as an upload is (`read_bounded`): never more than the bound, so an
    over-large or endless file (a device, a pipe) is refused, not read into memory."""
    from bot.sandbox.protocol import RunResult, refused
    from content.untrusted import Refused, read_bounded

    try:
        return read_bounded(path, "code file").decode("utf-8"), None
    except Refused as exc:
        return None, RunResult.from_wire(refused(f"{path}: {exc.message}"))
    except UnicodeDecodeError:
        return None, RunResult.from_wire(refused("not valid UTF-8 text, so not Python source"))
    except OSError as exc:
        return None, RunResult.from_wire(refused(f"cannot read {path}: {exc.strerror}"))


def _sandboxed(code: str, **options):
    """Run one submission on the shared sandbox service (SANDBOX_ADDRESS), or on a service
    of our own started for it: a RunResult. A sandbox that cannot be reached (Redis away,
    a wrong password, no socket), a run it refused (busy, no host) or one it could not
    judge through no fault of the code ends the command: one line on stderr, exit 2."""
    import asyncio
    import os

    from bot.cli.common import load_settings
    from bot.sandbox.client.client import SandboxBusy
    from bot.sandbox.client.fleet import BrokerUnavailable, client_for
    from bot.sandbox.protocol import UNJUDGED, RunResult

    settings = load_settings()

    async def once() -> RunResult:
        # The shared service when there is one: a run (~0.1 s), not a torch import (~5 s).
        client = client_for(settings.sandbox_address,
                            allow_unbounded_memory=settings.sandbox_allow_unbounded_memory)
        await client.start(keep_trying=False)  # one try: this command runs once
        try:
            # One run at a time per user of this machine (by uid: $USER is the caller's to
            # set), as for a learner on Discord.
            return await client.run(code, learner=f"cli:{os.getuid()}", **options)
        finally:
            await client.stop()

    try:
        result = asyncio.run(once())
    except SandboxBusy as exc:
        _give_up(f"the code was not run: {exc}")
    except BrokerUnavailable as exc:
        _give_up(f"the sandbox cannot be reached: {exc}")
    except OSError as exc:  # a shared service's socket that is not there, or refuses us
        _give_up(f"the sandbox cannot be reached at {settings.sandbox_address}: "
                 f"{exc.strerror or exc}")
    if result.unjudged is not None:
        detail = result.error or result.stderr
        _give_up(f"the code was not judged: {UNJUDGED[result.unjudged]}"
                 + (f" ({detail})" if detail else ""))
    return result


def _give_up(message: str) -> None:
    print(f"tutor: {message}", file=sys.stderr)
    sys.exit(2)


def cmd_sandbox_run(args) -> int:
    from bot.sandbox.protocol import OK

    code, result = _read_source(args.file)
    result = result or _sandboxed(code, device=args.device)
    keys = ("status", "exit_code", "stdout", "stderr", "elapsed_ms")
    report = {**{k: getattr(result, k) for k in keys},
              **{k: value for k in ("error", "line", "note", "device")
                 if (value := getattr(result, k))}}
    if args.json:
        print(json.dumps(report))
    else:
        sys.stdout.write(report["stdout"] or "")
        sys.stderr.write(report["stderr"] or "")
        if report.get("error"):
            print(f"[{report['status']}] {report['error']}", file=sys.stderr)
    return 0 if report["status"] == OK else 1


def cmd_sandbox_serve(args) -> int:
    """Run the sandbox service, shared by several bot processes."""
    import os

    from bot.cli.common import load_settings
    from bot.sandbox.broker import is_broker
    from bot.sandbox.process import PROJECT_ROOT, service_environment
    from bot.sandbox.service.service import BROKER_VARIABLE

    settings = load_settings()
    unbounded = ["--allow-unbounded-memory"] if settings.sandbox_allow_unbounded_memory else []
    environment = service_environment()
    broker = args.broker or settings.sandbox_broker
    if broker:
        if not is_broker(broker):
            print("--broker takes redis://user:password@host:port/db or rediss://...",
                  file=sys.stderr)
            return 2
        # To the service through its environment: argv is visible to every local user.
        environment[BROKER_VARIABLE] = broker
        serving = ["--pool", args.device]
    else:
        serving = ["--listen", args.listen, "--mode", args.mode]
    os.chdir(PROJECT_ROOT)
    tuning = [f"--{name}={value}" for name in ("limits", "parallel", "checkers", "connections",
                                               "fleet")
              if (value := getattr(args, name)) is not None]
    os.execve(sys.executable, [sys.executable, "-m", "bot.sandbox.service", *serving,
                               *unbounded, *tuning], environment)


# The fleet's two passwords come from the environment only: argv is visible to every local user.
ACL_PASSWORDS = ("REDIS_BOT_PASSWORD", "REDIS_SANDBOX_PASSWORD")


def cmd_sandbox_acl(args) -> int:
    """Print the fleet's Redis ACL file (the default user off, the bots' and the hosts' users)."""
    import os

    from bot.sandbox.broker import acl_rules

    passwords = [os.environ.get(name, "") for name in ACL_PASSWORDS]
    wrong = [name for name, password in zip(ACL_PASSWORDS, passwords, strict=True)
             if not password or any(c.isspace() for c in password)]
    if wrong:
        print(f"set {' and '.join(wrong)} in the environment: a password each, without "
              "spaces (e.g. openssl rand -hex 24)", file=sys.stderr)
        return 2
    sys.stdout.write(acl_rules(*passwords))
    return 0


def cmd_sandbox_doctor(args) -> int:
    """What isolation holds on this host; exit 1 when the sandbox would run unbounded."""
    from bot.cli.common import load_settings
    from bot.sandbox.jail import doctor

    report = doctor.diagnose(Path(args.cgroup_root),
                             load_settings().sandbox_allow_unbounded_memory)
    print(json.dumps(report) if args.json else doctor.render(report))
    return 0 if report["bounded"] else 1


def _decks(db: str | None):
    """The bundled decks and, with `--db` (or DATABASE_URL set), every deck stored there."""
    import os

    from bot.cli.common import database_url, load_library

    bundled = load_library()
    if db is None and not os.environ.get("DATABASE_URL"):
        return bundled
    from bot.app import build

    # The library read is all in memory: the store closes with the app, before any judging.
    with build(database_url=database_url(db), library=bundled, sandbox=False) as app:
        return app.tutor.library


def cmd_check(args) -> int:
    """Judge a code answer for a code card, as the bot would."""
    from bot.engine import report_from
    from content.schema import CodeCard

    library = _decks(args.db)
    if not library.has_card(args.card) or not isinstance(library.card(args.card), CodeCard):
        codes = [c.id for c in library.cards() if isinstance(c, CodeCard)]
        print(f"No code card '{args.card}'. Code cards: {', '.join(codes)}", file=sys.stderr)
        return 2
    card = library.card(args.card)
    code, result = _read_source(args.file)
    result = result or _sandboxed(code, mode="check", checker=card.checker,
                                  device=args.device, behaviour=card.behaviour_request())
    report = report_from(result)
    explained = [f"{m.title}: {m.explanation}"
                 for m in (library.mistake(card.id, i) for i in report.mistakes)]
    output = {"card": card.id, "status": report.status, "passed": report.passed,
              "mistakes": list(report.mistakes), "feedback": [*report.feedback, *explained],
              "stdout": report.stdout, "elapsed_ms": result.elapsed_ms}
    if args.json:
        print(json.dumps(output))
    else:
        print(("PASSED" if report.passed else "NOT YET") + f" ({report.status})")
        for line in output["feedback"]:
            print(f"- {line}")
    return 0 if report.passed else 1


def _code_file_arguments(parser: argparse.ArgumentParser, func) -> None:
    parser.add_argument("file")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=func)


def add_commands(sub) -> None:
    """`check` and `sandbox ...` on the top-level subparsers."""
    check = sub.add_parser("check", help="judge a code answer for a code card")
    check.add_argument("card", help="e.g. gradient-accumulation/train-loop")
    check.add_argument("--db", help="SQLite file whose stored decks to look in too "
                                    "(default: $DATABASE_URL when set)")
    _code_file_arguments(check, cmd_check)

    sandbox = sub.add_parser("sandbox", help="the code sandbox").add_subparsers(
        dest="sandbox_command", required=True)
    _code_file_arguments(sandbox.add_parser("run", help="run a Python file under the sandbox"),
                         cmd_sandbox_run)
    serve = sandbox.add_parser("serve", help="run the sandbox as a service (bots connect with "
                                             "SANDBOX_ADDRESS), or as a host of a fleet")
    serve.add_argument("--listen", default="unix:/run/tutor-sandbox.sock",
                       help="the Unix socket of a service on this machine")
    serve.add_argument("--broker", help="be a host of a fleet: take jobs from this Redis "
                                        "(redis://tutor-sandbox:PASSWORD@host:6379/0; "
                                        "rediss:// for TLS). Default: SANDBOX_BROKER")
    serve.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                       help="with --broker: the pool this host serves (cuda: a GPU host)")
    serve.add_argument("--mode", default="660",
                       help="Unix socket permissions, octal (666: a private shared volume)")
    serve.add_argument("--parallel", help="jailed children at once (default: by memory)")
    for name, what in (("limits", "protocol.Limits (per run)"),
                       ("checkers", "checker_pool.PoolLimits (the judges)"),
                       ("connections", "connections.ConnectionLimits"),
                       ("fleet", "broker.FleetTiming (with --broker)")):
        serve.add_argument(f"--{name}", help=f"JSON object overriding fields of {what}")
    serve.set_defaults(func=cmd_sandbox_serve)
    acl = sandbox.add_parser("acl", help="print the fleet's Redis ACL file; the passwords "
                                         "come from REDIS_BOT_PASSWORD and REDIS_SANDBOX_PASSWORD")
    acl.set_defaults(func=cmd_sandbox_acl)
    doctor = sandbox.add_parser("doctor", help="what isolation holds here (namespaces, seccomp, "
                                               "cgroup limits, GPU); exit 1 when unbounded")
    doctor.add_argument("--json", action="store_true", help="one JSON object")
    doctor.add_argument("--cgroup-root", default="/sys/fs/cgroup",
                        help="where cgroupfs is mounted (tests point it at a fake tree)")
    doctor.set_defaults(func=cmd_sandbox_doctor)
