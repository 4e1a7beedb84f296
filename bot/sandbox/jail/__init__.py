"""The jail: the zygote's process (`python -m bot.sandbox.jail.zygote`) and what it does to
each child it forks before learner code runs (namespaces, seccomp, cgroups, the harness),
and `tutor sandbox doctor`'s checks of the same. It imports neither the client nor the
service."""
