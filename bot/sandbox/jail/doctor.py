"""`tutor sandbox doctor`: what isolation holds on this host, checked for real.

Each check does what the service does, in a throwaway child or a probe group: unshare each
namespace, install the seccomp filter and see a denied call fail, make a cgroup with the
default limits and read them back. The GPU is only looked for (/dev/nvidia*): CUDA is never
initialised here, and torch is not imported.

The sandbox is *bounded* when namespaces, seccomp and a cgroup memory limit all hold; the
command exits 1 otherwise, whatever SANDBOX_ALLOW_UNBOUNDED_MEMORY says (that setting lets
code cards run anyway; it does not make them bounded).

Run it where the service runs, in the same kind of cgroup: on cgroup v2 the delegation
depends on which processes share it (`docker compose run --rm sandbox tutor sandbox doctor`).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

from bot.sandbox.jail import cgroups
from bot.sandbox.jail import syscalls as sc
from bot.sandbox.protocol import Limits

NAMESPACES = (("mount", sc.CLONE_NEWNS), ("pid", sc.CLONE_NEWPID), ("net", sc.CLONE_NEWNET),
              ("ipc", sc.CLONE_NEWIPC), ("uts", sc.CLONE_NEWUTS), ("user", sc.CLONE_NEWUSER))
FIX_MEMORY = ("run the sandbox service as root, privileged, in a cgroup of its own "
              "(compose: `privileged: true` and `cgroup: private`; systemd: Delegate=yes), "
              "or set SANDBOX_ALLOW_UNBOUNDED_MEMORY=true to accept rlimits only")


def _in_child(check: Callable[[], dict]) -> dict:
    """Run `check` in a forked child (whatever it changes dies with it); its result comes
    back as JSON over a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            try:
                result = check()
            except BaseException as exc:  # noqa: BLE001 - reported, never raised here
                result = {"error": f"{type(exc).__name__}: {exc}"}
            os.write(write, json.dumps(result).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(data) if data else {"error": "the check's child died"}


def _unshare_each() -> dict:
    """As a jailed child does: mount, pid, net, ipc and uts first, then its user namespace
    (after dropping supplementary groups)."""
    held = {}
    for name, flag in NAMESPACES:
        if name == "user":
            try:
                os.setgroups([])
            except OSError:
                pass  # not root: the unshare below says what matters
        try:
            sc.unshare(flag)
            held[name] = "ok"
        except OSError as exc:
            held[name] = exc.strerror or str(exc)
    return held


def check_namespaces() -> dict:
    held = _in_child(_unshare_each)
    if "error" in held:
        return {"ok": False, "error": held["error"]}
    return {"ok": all(v == "ok" for v in held.values()), **held}


def _seccomp_denies() -> dict:
    from bot.sandbox.jail import seccomp

    seccomp.install()
    libc = ctypes.CDLL(None, use_errno=True)
    # personality(0xffffffff) only reads the persona: it always succeeds unfiltered.
    if libc.personality(ctypes.c_ulong(0xFFFFFFFF)) == -1 and ctypes.get_errno() == errno.EPERM:
        return {"denied": True}
    return {"denied": False}


def check_seccomp() -> dict:
    from bot.sandbox.jail import seccomp

    if not seccomp.available():
        return {"ok": False, "error": "libseccomp not found (Debian: libseccomp2)"}
    result = _in_child(_seccomp_denies)
    if "error" in result:
        return {"ok": False, "error": result["error"]}
    if not result["denied"]:
        return {"ok": False, "error": "the filter installed but did not deny personality()"}
    return {"ok": True}


def check_cgroups(limits: Limits, root: Path) -> dict:
    """Make a probe group with `limits` as the service would, read it back, remove it."""
    found = cgroups.Cgroups.create(limits, root)  # makes and reads back a probe group
    if found is None:
        return {"cgroup": None, "memory_max_mb": None, "swap_max_mb": None, "pids_max": None,
                "problem": cgroups.last_problem}
    return {**found.describe(), "group": str(found.groups[0])}


def check_gpu() -> dict:
    devices = sorted(f"/dev/{n}" for n in os.listdir("/dev") if n.startswith("nvidia"))
    return {"present": os.path.exists("/dev/nvidiactl"), "devices": devices}


def _host_swap_mb() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("SwapTotal:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def diagnose(root: Path = cgroups.ROOT, allow_unbounded: bool = False) -> dict:
    """Every check, as one JSON-friendly object; `bounded` is the verdict.
    `allow_unbounded`: the operator's SANDBOX_ALLOW_UNBOUNDED_MEMORY, reported as it is."""
    report = {
        "root": os.geteuid() == 0,
        "namespaces": check_namespaces(),
        "seccomp": check_seccomp(),
        "cgroup": check_cgroups(Limits(), root),
        "host_swap_mb": _host_swap_mb(),
        "gpu": check_gpu(),
        "allow_unbounded_memory": allow_unbounded,
    }
    problems = []
    if not report["root"]:
        problems.append("not root: the jail needs root (namespaces, cgroups, id maps); run "
                        "`tutor sandbox doctor` and the service as root")
    if not report["namespaces"]["ok"]:
        failed = [k for k, v in report["namespaces"].items() if k != "ok" and v != "ok"]
        problems.append(f"namespaces: {', '.join(failed)} cannot be created; the sandbox "
                        "cannot start children (containers: `privileged: true`)")
    if not report["seccomp"]["ok"]:
        problems.append(f"seccomp: {report['seccomp']['error']}")
    if report["cgroup"]["memory_max_mb"] is None:
        reason = report["cgroup"].get("problem") or "the cgroup has no memory limit"
        problems.append(f"no cgroup memory limit ({reason}): code would run with rlimits "
                        f"only, which do not count shared memory; to fix: {FIX_MEMORY}")
    report["problems"] = problems
    report["bounded"] = not problems
    return report


def _mark(ok: bool | None) -> str:
    return {True: "[ok]", False: "[!!]", None: "[--]"}[ok]


def _mb(value: int | None) -> str:
    return "unlimited" if value is None else f"{value} MiB"


def render(report: dict) -> str:
    """One line per check, a mark and what holds; then the verdict."""
    lines = [f"{_mark(report['root'])} root: " + ("yes" if report["root"] else "NO")]
    spaces = report["namespaces"]
    detail = spaces.get("error") or ", ".join(
        name if spaces.get(name) == "ok" else f"{name} ({spaces.get(name)})"
        for name, _ in NAMESPACES)
    lines.append(f"{_mark(spaces['ok'])} namespaces: {detail}")
    lines.append(f"{_mark(report['seccomp']['ok'])} seccomp: " + (
        "libseccomp loaded; the filter denies what it should in a child"
        if report["seccomp"]["ok"] else report["seccomp"]["error"]))
    group = report["cgroup"]
    if group["cgroup"] is None:
        lines.append(f"{_mark(False)} cgroup: none usable: {group['problem']}")
    else:
        swap = _mb(group["swap_max_mb"])
        if group["swap_max_mb"] is None:
            swap += f" (no swap accounting; host swap {_mb(report['host_swap_mb'])})"
        lines.append(f"{_mark(group['memory_max_mb'] is not None)} cgroup {group['cgroup']}: "
                     f"memory {_mb(group['memory_max_mb'])}, swap {swap}, pids "
                     f"{group['pids_max'] or 'unlimited'} ({group['group']})")
    gpu = report["gpu"]
    lines.append(f"{_mark(None)} GPU: " + (", ".join(gpu["devices"]) if gpu["present"]
                                            else "none (/dev/nvidiactl absent): CPU only"))
    lines.append(f"{_mark(None)} SANDBOX_ALLOW_UNBOUNDED_MEMORY: " + (
        "true (code cards run even without a memory limit)" if report["allow_unbounded_memory"]
        else "false (without a memory limit, code cards are off)"))
    if report["bounded"]:
        lines.append("BOUNDED: namespaces, seccomp and a cgroup memory limit hold")
    else:
        lines.append("UNBOUNDED:")
        lines += [f"  - {problem}" for problem in report["problems"]]
    return "\n".join(lines)
