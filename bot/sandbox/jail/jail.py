"""Locking a forked child in before any learner code runs.

The child (pid 1 of fresh pid, mount, net, ipc and uts namespaces, still real root) builds
a read-only root that holds only the Python and torch runtime, pivots into it, becomes the
unprivileged `nobody` on the host and only then makes its user namespace (whose root is
that `nobody`), then sheds every capability, file descriptor and environment variable,
applies rlimits and a seccomp filter. The namespaces and mounts belong to the host's user
namespace, so even root inside the sandbox's own user namespace cannot change them.
"""

from __future__ import annotations

import os
import re
import resource
import stat
import sys
from pathlib import Path

from bot.sandbox.jail import seccomp
from bot.sandbox.jail import syscalls as sc
from bot.sandbox.process import PROJECT_ROOT
from bot.sandbox.protocol import Limits

# Where the new root is assembled: an empty host directory that holds no runtime path.
ROOT_CANDIDATES = ("/mnt", "/srv", "/media", "/opt", "/boot")
DEVICES = ("null", "zero", "full", "random", "urandom")
SANDBOX_UID = 65534  # nobody
# Set before the user namespace is made, which records them as its own maxima: caps on
# what all of `nobody`'s processes together (every run) may hold, as the kernel counts.
NAMESPACE_RLIMITS = ((resource.RLIMIT_SIGPENDING, 1024), (resource.RLIMIT_MSGQUEUE, 0),
                     (resource.RLIMIT_MEMLOCK, 0))
RUN_SIGPENDING = 64  # one run's queued signals: a hostile run leaves others their share
WORKDIR = "/code"  # the learner's empty, writable working directory
PROJECT_PACKAGES = ("bot", "content", "scheduler")


def runtime_paths() -> list[str]:
    """What learner code may read: system libraries and this Python with its packages (but
    this project's own: `project_dirs`)."""
    paths = ["/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache",
             sys.base_prefix, sys.prefix, *sys.path]
    return sorted({p for p in paths if p and os.path.isabs(p) and os.path.exists(p)
                   and not _inside_repo(p)})


def _inside_repo(path: str) -> bool:
    """The project checkout (database, .env, source) stays invisible; its venv does not."""
    candidate = Path(path).resolve()
    return candidate == PROJECT_ROOT or (PROJECT_ROOT in candidate.parents
                                         and not str(candidate).startswith(sys.prefix))


def project_dirs(runtime: list[str]) -> list[str]:
    """This project's packages where the runtime holds them (an image's site-packages). The
    child runs only what the zygote imported before forking (the observers); the rest (the
    judges, whose replay would tell a forger when a record passes, the service, the decks)
    it must neither import nor read, so these are covered by empty directories."""
    dirs = [str(PROJECT_ROOT / name) for name in PROJECT_PACKAGES]
    return [d for d in dirs if os.path.isdir(d) and any(_under(d, p) for p in runtime)]


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
    # A remount changes one mount, not those below it: make each submount read-only too
    # (a writable volume mounted inside the venv, say).
    for point in mount_points_under(target):
        sc.mount(None, point, None, sc.MS_BIND | sc.MS_REMOUNT | sc.MS_RDONLY | sc.MS_NOSUID
                 | sc.MS_NODEV)


def mount_points_under(directory: str) -> list[str]:
    """Mount points at or below `directory` in this mount namespace, parents first."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
        if _under(point, directory):
            points.append(point)
    return sorted(set(points), key=len)


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def build_root(limits: Limits, gpu: bool) -> None:
    """Make `/` a read-only runtime with a writable, size-capped work dir (and /tmp)."""
    runtime = runtime_paths()
    new_root = next(d for d in ROOT_CANDIDATES
                    if os.path.isdir(d) and not any(_under(p, d) for p in runtime))
    sc.mount(None, "/", None, sc.MS_REC | sc.MS_PRIVATE)
    sc.mount("tmpfs", new_root, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, "size=1m,mode=0755")
    for path in sorted(runtime, key=len):
        if not any(path != p and _under(path, p) for p in runtime):
            _bind_readonly(path, new_root)
    for hidden in project_dirs(runtime):
        sc.mount("tmpfs", new_root + hidden, "tmpfs",
                 sc.MS_RDONLY | sc.MS_NOSUID | sc.MS_NODEV, "size=4k,mode=0555")
    os.makedirs(new_root + "/dev", exist_ok=True)
    for name in DEVICES + (_gpu_devices() if gpu else ()):
        target = f"{new_root}/dev/{name}"
        open(target, "a").close()
        sc.mount(f"/dev/{name}", target, None, sc.MS_BIND)
    # /tmp too, unless this Python itself lives there (a checkout under /tmp).
    scratch = [WORKDIR] + ([] if any(_under(p, "/tmp") for p in runtime) else ["/tmp"])
    for writable in scratch:
        os.makedirs(new_root + writable)
        sc.mount("tmpfs", new_root + writable, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV,
                 f"size={limits.tmpfs_mb}m,mode=1777")
    os.makedirs(new_root + "/proc")
    if gpu:  # CUDA reads /proc; a fresh one shows only this sandbox's processes
        sc.mount("proc", new_root + "/proc", "proc", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
    os.makedirs(new_root + "/.old")
    sc.pivot_root(new_root, new_root + "/.old")
    os.chdir("/")
    sc.umount("/.old", sc.MNT_DETACH)
    os.rmdir("/.old")
    sc.mount(None, "/", None, sc.MS_REMOUNT | sc.MS_RDONLY | sc.MS_NOSUID | sc.MS_NODEV)
    os.chdir(WORKDIR)


def _gpu_devices(dev: str = "/dev") -> tuple[str, ...]:
    """The NVIDIA device nodes to bind into a GPU run. Character devices only: a folder
    such as /dev/nvidia-caps (MIG capabilities, not needed for a whole GPU) cannot be bound
    onto a file, and failed every GPU run on a real H200 host."""
    return tuple(sorted(n for n in os.listdir(dev) if n.startswith("nvidia")
                        and stat.S_ISCHR(os.stat(os.path.join(dev, n)).st_mode)))


def become_sandbox_user() -> None:
    """Become `nobody` on the host before the user namespace is made. The kernel charges
    what a namespace's users hold (inotify instances, queued signals, message queue bytes,
    processes) to the namespace's creator as well: that must never be host root."""
    for limit, value in NAMESPACE_RLIMITS:
        resource.setrlimit(limit, (value, value))
    os.setgroups([])  # root's supplementary groups must not come along
    os.setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    # Whatever fs.suid_dumpable made of that: no other `nobody` process may attach.
    sc.prctl(sc.PR_SET_DUMPABLE, 0)


def write_id_maps(pid: int) -> None:
    """From the parent (host root, so allowed although the child is no longer dumpable):
    `nobody`, the namespace's creator, is its root inside."""
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
    os.environ.update({"HOME": WORKDIR, "TMPDIR": WORKDIR, "PATH": "/usr/bin:/bin",
                       "OMP_NUM_THREADS": "1"})
    close_fds_except(keep_fds)
    mb = 1 << 20
    # CPU: SIGXCPU at the soft limit, SIGKILL a second later for a program that ignores it.
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
    for limit, value in (
        (resource.RLIMIT_DATA, data_now + limits.data_mb * mb),
        (resource.RLIMIT_FSIZE, limits.file_mb * mb),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, max(limits.pids, 64)),
        (resource.RLIMIT_SIGPENDING, RUN_SIGPENDING),
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
