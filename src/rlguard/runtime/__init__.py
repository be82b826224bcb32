"""The execution plane: one synchronous RLHF step run as serverless functions (RLHFless,
arXiv 2602.22718) or on a serverful verl-style pool, with the policies, cost model and simulator.

Its rooms, lowest first (each imports only the ones before it):
- `policies/`: torch-free planning (profiles, prices, lengths, assignment, scaling, migration,
  components, billing, reports);
- `sim/`: the step simulator (and the model and GPU catalog it derives profiles from);
- `calib/`: the simulator calibrated against measured verl runs;
- `generation/`: batched generation on torch (KV cache, sampling, measured profiles);
- `executors/`: the step on Ray functions, serverless and serverful, and the trainer's bridge.
`data/` holds the shipped profiles, the measured verl steps and the fitted calibration.

Nothing heavy is imported here: `rlguard runtime simulate` needs neither torch nor Ray.
"""
