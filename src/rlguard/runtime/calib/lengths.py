"""A response-length model matched to the statistics verl logs per step: mean, max and clip ratio.

Measured RL steps have a light body and rare runaways to the cap (GSM8K runs clip 0.02-0.2% of
responses): a lognormal alone cannot match both the mean and the clip ratio without a heavy body.
So the body is a lognormal of a given spread, and a fraction of the samples runs away to the cap
at random (`LengthModel.runaway_p`); the median sets the mean and the runaway share the clip ratio.
When nothing reaches the cap (max below it), there are no runaways and the max sets the spread.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from scipy.optimize import brentq

from rlguard.errors import InputError
from rlguard.runtime.sim.workload import LengthModel

_N = NormalDist()
PROMPT_SIGMA = 0.35  # sd of log prompt length: the simulator's GSM8K assumption
# sd of log-length of the body under the cap (the runaways aside); docs/runtime.md "Calibration"
BODY_SIGMA = 0.45


def _body_above(median: float, sigma: float, cap: float) -> float:
    """P(lognormal(median, sigma) > cap)."""
    return 1 - _N.cdf(math.log(cap / median) / sigma)


def _capped_mean(median: float, sigma: float, cap: float) -> float:
    """E[min(X, cap)] for X ~ lognormal(median, sigma)."""
    z = math.log(cap / median) / sigma
    return median * math.exp(sigma**2 / 2) * _N.cdf(z - sigma) + cap * (1 - _N.cdf(z))


def runaway_share(median: float, sigma: float, cap: float, clip: float) -> float:
    """The runaway probability that makes the clipped fraction `clip` (0 if the body's own tail
    already clips that much)."""
    body = _body_above(median, sigma, cap)
    return max(0.0, (clip - body) / (1 - body))


def _mean(median: float, sigma: float, cap: float, clip: float) -> float:
    p = runaway_share(median, sigma, cap, clip)
    return p * cap + (1 - p) * _capped_mean(median, sigma, cap)


def fit_body(
    mean: float, cap: float, clip: float, sigma: float, longest: float | None, samples: int
) -> tuple[float, float, float]:
    """(median, sigma, runaway share) of a step with these statistics. With responses below the
    cap and no clipping, `longest` (the step's max) sets sigma: it is the body's 1 - 1/(samples+1)
    quantile; otherwise `sigma` is the body's spread and runaways make up the clip ratio. A max
    at the cap means at least one response was clipped, whatever the rounded ratio says (verl
    logs it to three decimals: 0.000 for one in 5,120)."""
    if longest is not None and longest >= cap:
        clip = max(clip, 1 / samples)
    if not 0 < mean < cap:
        raise InputError(f"mean response length {mean:g} must be in (0, max_response {cap:g})")
    if longest is not None and longest < cap and clip == 0 and longest > mean:
        z = _N.inv_cdf(1 - 1 / (samples + 1))
        # longest / mean = exp(sigma z - sigma^2 / 2): the smaller root
        ratio = math.log(longest / mean)
        disc = z * z - 2 * ratio
        sigma = z - math.sqrt(disc) if disc > 0 else z
        median = mean * math.exp(-(sigma**2) / 2)
        return median, sigma, 0.0
    lo, hi = 1e-3, 4 * cap  # a body centred past the cap: a short cap clips most responses
    if not _mean(lo, sigma, cap, clip) <= mean <= _mean(hi, sigma, cap, clip):
        raise InputError(
            f"no length model has mean {mean:g} with clip ratio {clip:g} and body sigma {sigma:g}"
        )
    median = brentq(lambda m: _mean(m, sigma, cap, clip) - mean, lo, hi, xtol=1e-6)
    return median, sigma, runaway_share(median, sigma, cap, clip)


def workload_from_stats(
    mean: float,
    cap: int,
    clip: float,
    longest: float | None,
    samples: int,
    prompt_mean: float,
    max_prompt: int,
    dataset_prompts: int,
) -> LengthModel:
    """The simulator's workload for a job with these logged statistics: prompts lognormal around
    their mean (no shared prefix counted), responses as `fit_body` finds them."""
    median, sigma, runaway = fit_body(mean, cap, clip, BODY_SIGMA, longest, samples)
    return LengthModel(
        dataset_prompts=dataset_prompts,
        prefix_tokens=0,
        prompt_median=prompt_mean * math.exp(-(PROMPT_SIGMA**2) / 2),
        prompt_sigma=PROMPT_SIGMA,
        max_prompt=max_prompt,
        response_median=median,
        response_sigma=sigma,
        runaway_p=runaway,
        max_response=cap,
    )
