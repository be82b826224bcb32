"""Cluster plane: EvalStop and base schedulers in a discrete-event GPU-cluster simulator."""
