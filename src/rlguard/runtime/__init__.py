"""The execution plane: one synchronous RLHF step run as serverless functions (RLHFless,
arXiv 2602.22718) or on a serverful verl-style pool, with the policies, cost model and simulator.

Nothing heavy is imported here: `rlguard runtime simulate` needs neither torch nor Ray.
"""
