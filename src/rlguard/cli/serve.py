"""`rlguard serve`: the platform's server (its operator's `rlguard tenants` is cli/tenants.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from rlguard.cli.options import names, validated
from rlguard.cli.options import policy_args as parse_policy_args
from rlguard.errors import InputError
from rlguard.platform.servers import DATA_DIR_ENV, DEFAULT_DATA_DIR

DataDir = Annotated[Path, typer.Option(help="the platform's data directory", envvar=DATA_DIR_ENV)]
Db = Annotated[str | None, typer.Option(help="store URL [default: SQLite in --data-dir]")]


def serve(
    db: Db = None,
    address: Annotated[str | None, typer.Option(help="an existing Ray cluster")] = None,
    policy: Annotated[str, typer.Option(help="base scheduler (as in rlguard simulate)")] = "fifo",
    policy_args: Annotated[
        str, typer.Option(help="the policy's knobs: JSON, key=value,... or @FILE (JSON/YAML)")
    ] = "{}",
    stop_rule: Annotated[str, typer.Option(help="the default stop rule, or none")] = "evalstop",
    k: Annotated[int, typer.Option(help="EvalStop: consecutive declines")] = 3,
    min_delta: Annotated[float, typer.Option(help="EvalStop: smallest counted decline")] = 0.01,
    warmup: Annotated[int, typer.Option(help="EvalStop: evals before counting")] = 2,
    stop_kinds: Annotated[
        str, typer.Option(help="job kinds the stop rule judges: all, or e.g. sft,rlhf")
    ] = "all",
    gpus: Annotated[int, typer.Option(help="GPUs of a local Ray (virtual on a CPU)")] = 2,
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8321,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    grace_s: Annotated[float, typer.Option(min=0, help="stop grace before SIGKILL")] = 30.0,
    max_starting: Annotated[
        int, typer.Option(min=1, help="runs starting at once; the queue's next jobs wait")
    ] = 16,
    mount: Annotated[
        list[str] | None,
        typer.Option(help="[TENANT/]NAME=PATH:ro, read-only in jobs' view (repeatable)"),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(
            help="NAME=PATH: a Hugging Face model fine-tuning jobs start from (repeatable)"
        ),
    ] = None,
    single_tenant: Annotated[
        bool, typer.Option(help="run jobs unsandboxed, as the server's user (one trust domain)")
    ] = False,
    job_memory_mb: Annotated[int, typer.Option(min=64, help="a job's default memory")] = 16384,
    job_pids: Annotated[int, typer.Option(min=16, help="processes and threads per job")] = 4096,
    job_disk_mb: Annotated[int, typer.Option(min=1, help="a job directory's size limit")] = 51200,
    job_tmp_mb: Annotated[int, typer.Option(min=1, help="a job's /tmp and /dev/shm")] = 1024,
    job_seccomp: Annotated[
        bool, typer.Option(help="the job sandbox's seccomp filter (no user namespaces, ...)")
    ] = True,
    storage: Annotated[
        str | None,
        typer.Option(
            help="artifact store: PATH, file:///PATH or s3://BUCKET/PREFIX "
            "[default: DATA_DIR/artifacts]"
        ),
    ] = None,
    keep_last: Annotated[
        int, typer.Option(min=1, help="checkpoints a job keeps in the store besides its best")
    ] = 2,
    checkpoint_max_files: Annotated[
        int, typer.Option(min=1, help="files one reported checkpoint may hold")
    ] = 10_000,
    checkpoint_max_mb: Annotated[
        int, typer.Option(min=1, help="MiB one reported checkpoint may hold")
    ] = 51_200,
    job_max_upload_files: Annotated[
        int, typer.Option(min=1, help="files a job may have uploaded in all (every checkpoint)")
    ] = 100_000,
    job_max_upload_mb: Annotated[
        int, typer.Option(min=1, help="MiB a job may have uploaded in all (every checkpoint)")
    ] = 1_048_576,
    job_store_mb: Annotated[
        int, typer.Option(min=1, help="MiB a job's reports may store in the platform's database")
    ] = 32,
    job_reports_per_s: Annotated[
        float, typer.Option(min=0.001, help="reports a job may post per second, sustained")
    ] = 200.0,
    job_reports_burst: Annotated[
        int, typer.Option(min=1, help="reports a job may post at once above that rate")
    ] = 1000,
    max_working_dir_mb: Annotated[
        int, typer.Option(min=1, help="MiB a job's working directory may hold (and upload)")
    ] = 256,
    package_index: Annotated[
        str | None,
        typer.Option(help="jobs' packages: an index URL, or none [default: uv's, PyPI]"),
    ] = None,
    find_links: Annotated[
        list[str] | None,
        typer.Option(help="a directory or page of wheels for jobs' packages (repeatable)"),
    ] = None,
    job_env_base: Annotated[
        str, typer.Option(help="under a job's packages: rlguard (the platform's) or none")
    ] = "rlguard",
    env_cache_mb: Annotated[
        int, typer.Option(min=1, help="MiB of jobs' environments each node keeps (LRU)")
    ] = 20_480,
    max_file_mb: Annotated[
        int, typer.Option(min=1, help="MiB a fine-tuning file may hold (POST /v1/files)")
    ] = 512,
    log_format: Annotated[
        str, typer.Option(help="the server's log: text, or json (one object per line)")
    ] = "text",
    public_url: Annotated[
        str | None,
        typer.Option(
            help="where jobs reach the platform: the load balancer in front of several "
            "servers [default: this server's own URL]"
        ),
    ] = None,
) -> None:
    """Run the platform: HTTP API, scheduler and Ray executor (Ctrl-C stops it gracefully)."""
    from rlguard.cluster.registry import BASES, RuleParams
    from rlguard.platform.jobview import Defaults, host_problem
    from rlguard.platform.mounts import check_mounts, parse_mount

    names(policy, list(BASES), "--policy", allow_many=False)
    from rlguard.platform.log_format import FORMATS

    names(log_format, list(FORMATS), "--log-format", allow_many=False)
    args = parse_policy_args(policy_args)
    if public_url is not None and not public_url.startswith(("http://", "https://")):
        raise InputError(f"option --public-url: not an http:// or https:// URL ({public_url!r})")
    if gpus < 1:
        raise InputError(f"option --gpus: must be >= 1 (got {gpus})")
    params = validated(RuleParams, k=k, min_delta=min_delta, warmup=warmup)
    from rlguard.platform.rules import parse_kinds

    kinds = parse_kinds(stop_kinds)
    mounts = [parse_mount(m) for m in mount or []]
    from rlguard.platform.finetune.base_models import check_unique, parse_model

    models = check_unique([parse_model(m) for m in model or []])
    mounts += [m.as_mount() for m in models.values()]  # read-only in every job's view
    check_mounts(mounts, data_dir)
    from rlguard.platform.jobenv import PackageIndex, Software

    index = PackageIndex(package_index, tuple(find_links or ()))
    software = Software(max_working_dir_mb, index, job_env_base, env_cache_mb, max_file_mb)
    from rlguard.platform.artifacts import ArtifactStore, default_uri

    ArtifactStore(storage or default_uri(data_dir)).check()  # one line and exit 2 if not
    problem = None if single_tenant else host_problem(job_seccomp)
    if problem:
        raise InputError(
            f"cannot sandbox jobs on this host: {problem}; pass --single-tenant to run every "
            "job unsandboxed as the server's user"
        )
    if address is None:  # Ray reads its auth mode once, when imported: set it before that
        from rlguard.platform.ray_head import auth_env

        data_dir.mkdir(parents=True, exist_ok=True)
        os.environ.update(auth_env(data_dir))
    from rlguard.platform.job_writes import WriteLimits
    from rlguard.platform.server import ServeConfig
    from rlguard.platform.server import serve as run_server
    from rlguard.platform.uploader import UploadLimits

    cfg = ServeConfig(
        data_dir=data_dir,
        db=db,
        address=address,
        policy=policy,
        policy_args=args,
        stop_rule=stop_rule,
        rule_params=params,
        stop_kinds=kinds,
        gpus=gpus,
        host=host,
        port=port,
        grace_s=grace_s,
        max_starting=max_starting,
        mounts=tuple(mounts),
        models=tuple(models.values()),
        single_tenant=single_tenant,
        limits=Defaults(job_memory_mb, job_pids, job_disk_mb, job_tmp_mb, job_seccomp),
        storage=storage,
        keep_last=keep_last,
        uploads=UploadLimits(
            checkpoint_max_files, checkpoint_max_mb, job_max_upload_files, job_max_upload_mb
        ),
        writes=WriteLimits(job_store_mb, job_reports_per_s, job_reports_burst),
        software=software,
        log_format=log_format,
        public_url=public_url.rstrip("/") if public_url else None,
    )
    run_server(cfg)
