"""The live platform: tenants submit jobs over HTTP, the cluster plane's schedulers place them on
Ray, jobs stream eval events and EvalStop stops the hacking ones online (docs/platform.md).

Only the CLI imports the service; a job imports `rlguard.platform.client` alone.
"""
