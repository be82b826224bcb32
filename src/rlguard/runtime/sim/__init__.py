"""A simulator of one synchronous RLHF step at scale, driven by time profiles and synthetic
long-tailed response lengths; see docs/runtime.md for every modelling assumption and its source."""
