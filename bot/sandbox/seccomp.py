"""A seccomp filter (libseccomp, through ctypes) for learners' code.

Allow by default, deny what a training loop never needs: debugging other processes,
(re)mounting and new namespaces, kernel keyrings, BPF, module and kexec loading, and any
socket that is not a local Unix socket. Denied calls fail with EPERM, so learners see a
clear Python error rather than a killed process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import socket

from bot.sandbox.syscalls import ALL_NAMESPACES

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount",
    "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "adjtimex",
    "syslog", "quotactl", "lookup_dcookie", "open_by_handle_at", "name_to_handle_at",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "personality",
    "setpriority", "sched_setscheduler", "ioprio_set",
)

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_NE, SCMP_CMP_MASKED_EQ = 1, 7


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)  # SCMP_ACT_ERRNO(code)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


@functools.cache
def _library() -> ctypes.CDLL:
    """Loaded once, in the worker: find_library runs compilers and writes temp files,
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
    deny = _errno_action(errno.EPERM)

    def rule(name: str, *conditions: tuple[int, int, int, int]) -> None:
        number = lib.seccomp_syscall_resolve_name(name.encode())
        if number < 0:  # not a syscall on this architecture
            return
        array = (_ArgCmp * max(1, len(conditions)))(*[_ArgCmp(*c) for c in conditions])
        result = lib.seccomp_rule_add_array(ctx, deny, number, len(conditions), array)
        if result < 0:
            raise OSError(-result, f"seccomp rule for {name} failed")

    try:
        for name in DENIED:
            rule(name)
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
        number = lib.seccomp_syscall_resolve_name(b"clone3")
        if number >= 0:
            lib.seccomp_rule_add_array(ctx, _errno_action(errno.ENOSYS), number, 0,
                                       (_ArgCmp * 1)())
        result = lib.seccomp_load(ctx)
        if result < 0:
            raise OSError(-result, "seccomp_load failed")
    finally:
        lib.seccomp_release(ctx)


def _namespace_flags() -> list[int]:
    return [1 << bit for bit in range(32) if ALL_NAMESPACES & (1 << bit)]
