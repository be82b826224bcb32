"""Calibration of the step simulator against measured verl runs: the measurements as data, verl's
own logs read, the trainer's communication, and the decode, phase and length models fitted to
them; a job file turned into a calibrated profile and setup.

Nothing here imports torch or Ray. The public names load on first use (PEP 562).
"""

from rlguard._lazy import lazy_exports

_EXPORTS = {
    "JobFile": "rlguard.runtime.calib.job",
    "calibrated_for": "rlguard.runtime.calib.job",
    "job_profile": "rlguard.runtime.calib.job",
    "job_setup": "rlguard.runtime.calib.job",
    "read_job": "rlguard.runtime.calib.job",
    "calibrate": "rlguard.runtime.calib.calibrate",
    "Coefficients": "rlguard.runtime.calib.coefficients",
    "load_coefficients": "rlguard.runtime.calib.coefficients",
    "save_coefficients": "rlguard.runtime.calib.coefficients",
    "MeasuredStep": "rlguard.runtime.calib.measured",
    "read_measured": "rlguard.runtime.calib.measured",
    "Replay": "rlguard.runtime.calib.replay",
    "TrainLayout": "rlguard.runtime.calib.comm",
    "TrainerSettings": "rlguard.runtime.calib.comm",
    "comm_s_per_token": "rlguard.runtime.calib.comm",
    "WORKLOADS": "rlguard.runtime.calib.workloads",
    "read_verl_log": "rlguard.runtime.calib.verl_logs",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
