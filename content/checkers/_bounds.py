"""The bounds a jailed child's record keeps and the judge enforces again: the one module of
the checkers that both sides import.

The observers (`_observe`, `_behave`) run in every jailed child, and whatever they import
is there for learner code to read and call. So they take their bounds from here, not from
the judge's modules (`_scenario`, `_trace`, `_values`): the replay and the comparisons stay
in the sandbox service's checker processes. Constants only; it imports nothing.
"""

# A train-loop scenario's events. A correct or buggy loop of these scenarios makes 70 to 400
# (40 micro-batches with scaler, clip and scheduler calls each); 2,000 leaves room for
# evaluation passes and extra epochs. The observer stops recording past it, and the judge,
# whose work grows with it, refuses a record longer than it.
MAX_EVENTS = 2_000
MAX_ROWS = 1_000  # rows of one loss ("P" event); the observer tags no larger one
# Rows of all "P" events of a scenario, a bound on the judge's work: a correct loop of these
# scenarios sends at most ~600 (a window's 15 rows per micro-batch, open_clip's way).
MAX_ROWS_TOTAL = 20_000
# Flags of a step event ("S"): what the observer saw around optimizer.step().
IN_BACKWARD, FOREIGN_OPTIMIZER = 1, 2

# A behaviour run's outputs.
MAX_VALUES = 10_000  # numbers, strings and containers in one program's outputs (or the inputs)
MAX_DEPTH = 16
MAX_TEXT = 4_000
MAX_CASES = 64
INT_RANGE = (-(2**63), 2**64)  # what int64 and uint64 tensors hold; [lo, hi)
