"""Locking a forked child in before any learner code runs.

The child (pid 1 of fresh pid, mount, net, ipc and uts namespaces, still real root) builds
a read-only root that holds only the Python and torch runtime, pivots into it, enters a
user namespace where its root is the unprivileged `nobody` outside, then sheds every
capability, file descriptor and environment variable, applies rlimits and a seccomp
filter. The namespaces and mounts belong to the host's user namespace, so even root
inside the sandbox's own user namespace cannot change them.
"""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

from bot.sandbox import seccomp
from bot.sandbox import syscalls as sc
from bot.sandbox.protocol import Limits

NEW_ROOT = "/mnt"
DEVICES = ("null", "zero", "full", "random", "urandom")
SANDBOX_UID = 65534  # nobody
WORKDIR = "/code"  # the learner's empty, writable working directory


def runtime_paths() -> list[str]:
    """What learner code may read: system libraries and this Python with its packages."""
    paths = ["/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache",
             sys.base_prefix, sys.prefix, *sys.path]
    return sorted({p for p in paths if p and os.path.isabs(p) and os.path.exists(p)
                   and not _inside_repo(p)})


def _inside_repo(path: str) -> bool:
    """The project checkout (database, .env, source) stays invisible; its venv does not."""
    repo = Path(__file__).resolve().parents[2]
    candidate = Path(path).resolve()
    return candidate == repo or (repo in candidate.parents
                                 and not str(candidate).startswith(sys.prefix))


def _bind_readonly(source: str, root: str) -> None:
    target = root + source
    if os.path.islink(source) and os.path.dirname(source) == "/":
        os.symlink(os.readlink(source), target)  # /lib -> usr/lib on merged-/usr systems
        return
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    sc.mount(source, target, None, sc.MS_BIND | sc.MS_REC)
    sc.mount(None, target, None, sc.MS_BIND | sc.MS_REMOUNT | sc.MS_RDONLY | sc.MS_NOSUID
             | sc.MS_NODEV)


def build_root(limits: Limits, gpu: bool) -> None:
    """Make `/` a read-only runtime with writable, size-capped /work and /tmp."""
    sc.mount(None, "/", None, sc.MS_REC | sc.MS_PRIVATE)
    sc.mount("tmpfs", NEW_ROOT, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, "size=1m,mode=0755")
    nested = sorted(runtime_paths(), key=len)
    for path in nested:
        if not any(path != p and path.startswith(p.rstrip("/") + "/") for p in nested):
            _bind_readonly(path, NEW_ROOT)
    os.makedirs(NEW_ROOT + "/dev", exist_ok=True)
    for name in DEVICES + (_gpu_devices() if gpu else ()):
        target = f"{NEW_ROOT}/dev/{name}"
        open(target, "a").close()
        sc.mount(f"/dev/{name}", target, None, sc.MS_BIND)
    for writable in (WORKDIR, "/tmp"):
        os.makedirs(NEW_ROOT + writable)
        sc.mount("tmpfs", NEW_ROOT + writable, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV,
                 f"size={limits.tmpfs_mb}m,mode=1777")
    os.makedirs(NEW_ROOT + "/proc")
    if gpu:  # CUDA reads /proc; a fresh one shows only this sandbox's processes
        sc.mount("proc", NEW_ROOT + "/proc", "proc", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
    os.makedirs(NEW_ROOT + "/.old")
    sc.pivot_root(NEW_ROOT, NEW_ROOT + "/.old")
    os.chdir("/")
    sc.umount("/.old", sc.MNT_DETACH)
    os.rmdir("/.old")
    sc.mount(None, "/", None, sc.MS_REMOUNT | sc.MS_RDONLY | sc.MS_NOSUID | sc.MS_NODEV)
    os.chdir(WORKDIR)


def _gpu_devices() -> tuple[str, ...]:
    return tuple(sorted(n for n in os.listdir("/dev") if n.startswith("nvidia")))


def write_id_maps(pid: int) -> None:
    """From the parent: the child's root becomes `nobody` outside its user namespace."""
    Path(f"/proc/{pid}/setgroups").write_text("deny")
    Path(f"/proc/{pid}/uid_map").write_text(f"0 {SANDBOX_UID} 1")
    Path(f"/proc/{pid}/gid_map").write_text(f"0 {SANDBOX_UID} 1")


def close_fds_except(keep: tuple[int, ...]) -> None:
    previous = 2
    for fd in [*sorted(keep), os.sysconf("SC_OPEN_MAX")]:
        os.closerange(previous + 1, fd)
        previous = fd


def lock_down(limits: Limits, keep_fds: tuple[int, ...], data_now: int) -> None:
    """The last steps before learner code: nothing inherited, nothing privileged.
    `data_now` is the data segment already mapped (the forked torch image)."""
    os.environ.clear()
    os.environ.update({"HOME": WORKDIR, "TMPDIR": "/tmp", "PATH": "/usr/bin:/bin",
                       "OMP_NUM_THREADS": "1"})
    close_fds_except(keep_fds)
    mb = 1 << 20
    for limit, value in (
        (resource.RLIMIT_CPU, limits.cpu_s),
        (resource.RLIMIT_DATA, data_now + limits.data_mb * mb),
        (resource.RLIMIT_FSIZE, limits.file_mb * mb),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, max(limits.pids, 64)),
        (resource.RLIMIT_MEMLOCK, 0),
    ):
        resource.setrlimit(limit, (value, value))
    sc.prctl(sc.PR_SET_DUMPABLE, 0)
    sc.prctl(sc.PR_SET_NO_NEW_PRIVS, 1)
    sc.drop_capabilities()
    seccomp.install()


def vm_data_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmData:"):
            return int(line.split()[1]) * 1024
    return 0
