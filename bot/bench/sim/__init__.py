"""Simulated learners for `tutor bench learning`: memory model (memory.py), the learner
(learner.py), the deck as the learner sees it (deck.py), scheduling policies behind one
interface (policies.py; the real engine behind it: engine_policy.py), and the run (run.py)."""
