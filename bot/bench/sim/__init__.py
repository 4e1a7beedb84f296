"""Simulated learners for `tutor bench learning`: memory models (worlds.py: FSRS-4.5's own in
memory.py, ACT-R's activation in memory_actr.py), the learner (learner.py), the deck as the
learner sees it (deck.py), scheduling policies behind one interface (policies.py; the real
engine behind it: engine_policy.py), the run (run.py), and the paired remediation study of
`tutor bench remediation` (remediation_study.py)."""
