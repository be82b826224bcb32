"""Calibration of the step simulator against measured verl runs: the measurements as data, verl's
own logs read, and the decode, phase and length models fitted to them."""
