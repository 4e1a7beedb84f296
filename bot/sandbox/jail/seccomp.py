"""A seccomp filter (libseccomp, through ctypes) for learners' code.

Allow by default, deny what a training loop never needs: debugging other processes,
(re)mounting and new namespaces, kernel keyrings, BPF, module and kexec loading, any socket
that is not a local Unix socket, and what reaches past the sandbox into the host: kernel
objects counted per user up to the host (inotify, fanotify, POSIX message queues) and
flushing the host's filesystems. Denied calls fail with EPERM, so learners see a clear
Python error rather than a killed process. Calls that could only matter to the host
here are answered "done" without running (FAKED).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import socket

from bot.sandbox.jail.syscalls import ALL_NAMESPACES

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount",
    "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "adjtimex",
    "syslog", "quotactl", "lookup_dcookie", "open_by_handle_at", "name_to_handle_at",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "personality",
    "setpriority", "sched_setscheduler", "sched_setattr", "ioprio_set", "clock_adjtime",
    "quotactl_fd", "vhangup",
    # Counted per user, and up the chain to whoever made the user namespace.
    "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark",
    "mq_open",
    # sync flushes every filesystem of the host, syncfs the host's disk behind /usr.
    "sync", "syncfs",
    # Secret memory splits the kernel's direct map; cachestat tells which host files other
    # processes have read lately.
    "memfd_secret", "cachestat",
)
# Succeed without running. The sandbox writes only to tmpfs, where these do nothing, but
# on a host file opened read-only fsync still flushes the host disk's cache (once per
# call), sync_file_range starts the host's writeback, and fadvise(DONTNEED) empties the
# page cache of files every run and the host read (torch's libraries).
FAKED = ("fsync", "fdatasync", "sync_file_range", "fadvise64")

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_NE, SCMP_CMP_EQ, SCMP_CMP_MASKED_EQ = 1, 4, 7
F_SETPIPE_SZ = 1031


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)  # SCMP_ACT_ERRNO(code)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


@functools.cache
def _library() -> ctypes.CDLL:
    """Loaded once, in the service: find_library runs compilers and writes temp files,
    which a jailed child can do neither of."""
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


def available() -> bool:
    try:
        _library()
    except OSError:
        return False
    return True


def install() -> None:
    """Load the filter into this process (and every process it starts)."""
    lib = _library()
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")

    def rule(name: str, *conditions: tuple[int, int, int, int],
             action: int = _errno_action(errno.EPERM)) -> None:
        number = lib.seccomp_syscall_resolve_name(name.encode())
        if number < 0:  # not a syscall on this architecture (or this libseccomp)
            return
        array = (_ArgCmp * max(1, len(conditions)))(*[_ArgCmp(*c) for c in conditions])
        result = lib.seccomp_rule_add_array(ctx, action, number, len(conditions), array)
        if result < 0:
            raise OSError(-result, f"seccomp rule for {name} failed")

    try:
        for name in DENIED:
            rule(name)
        for name in FAKED:
            rule(name, action=_errno_action(0))  # returns 0 and skips the call
        # Bigger pipes come out of one per-user allowance that every run shares.
        rule("fcntl", (1, SCMP_CMP_EQ, F_SETPIPE_SZ, 0))
        # Own rlimits can only be lowered (hard = soft, no CAP_SYS_RESOURCE); nobody
        # else's can be touched at all.
        rule("prlimit64", (0, SCMP_CMP_NE, 0, 0))
        # No network: only AF_UNIX sockets (Python's own machinery may use socketpair).
        rule("socket", (0, SCMP_CMP_NE, socket.AF_UNIX, 0))
        rule("socketpair", (0, SCMP_CMP_NE, socket.AF_UNIX, 0))
        # Threads and processes yes, new namespaces no. clone3 hides its flags in memory,
        # so it answers ENOSYS and glibc falls back to clone, whose flags we can see.
        for flag in _namespace_flags():
            rule("clone", (0, SCMP_CMP_MASKED_EQ, flag, flag))
        rule("clone3", action=_errno_action(errno.ENOSYS))
        result = lib.seccomp_load(ctx)
        if result < 0:
            raise OSError(-result, "seccomp_load failed")
    finally:
        lib.seccomp_release(ctx)


def _namespace_flags() -> list[int]:
    return [1 << bit for bit in range(32) if ALL_NAMESPACES & (1 << bit)]
