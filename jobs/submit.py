"""The pipeline's stages as one Spark application, for `spark-submit` (and Airflow's
SparkSubmitOperator): one stage of one job's period per submission.

    spark-submit --master spark://127.0.0.1:7077 --jars <.reconf/jars/*.jar, comma-separated> \\
        jobs/submit.py collect --job demo --period-end 2026-01-01T00:05:00Z

Stages: collect, validate, plan (with --strategy, --max-migrations, --time-limit, --dry-run),
publish, and fleet (plan every configured job's period at once, `reconf fleet`).
The master is `--master` of this script if given, else spark-submit's `--master`; run directly
(`python -m jobs.submit …`) it is `$RECONF_SPARK_MASTER`, else local[2]. `python -m jobs.submit
--print-submit-args` prints the spark-submit options the jars and settings need
(`jobs.spark.session.submit_settings`, which the Airflow DAG uses too).

Exit codes: 0 done; 2 bad input (what / where / fix on stderr; nothing written); 1 anything else.
This command line is a contract (the DAG's SparkSubmitOperator builds it): keep it stable.
"""

from __future__ import annotations

import sys
from pathlib import Path

# spark-submit runs this file as a script, which puts jobs/ first on sys.path: drop it, so that
# jobs/spark/session.py etc. never shadow a top-level module, and make sure the project is importable.
_HERE, _ROOT = Path(__file__).resolve().parent, Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

import argparse  # noqa: E402
from collections.abc import Sequence  # noqa: E402

__all__ = ["STAGES", "main", "submit_command"]

STAGES = ("collect", "validate", "plan", "publish", "fleet")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jobs/submit.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--print-submit-args", action="store_true",
                        help="print the spark-submit options (--jars, --conf) and exit")
    sub = parser.add_subparsers(dest="stage", metavar="STAGE")
    for stage in STAGES:
        p = sub.add_parser(stage, help=f"run the {stage} stage")
        if stage != "fleet":
            p.add_argument("--job", required=True, help="job id from the job config")
        else:
            p.add_argument("--jobs", help="comma list of job ids (default: every configured job)")
        p.add_argument("--period-end", required=True, metavar="T",
                       help="end of the statistics period, ISO-8601 with a zone")
        p.add_argument("--master", help="Spark master URL (overrides spark-submit's --master)")
        if stage in ("plan", "fleet"):
            p.add_argument("--strategy", help="override the configured strategy")
            p.add_argument("--dry-run", action="store_true",
                           help="log to MLflow tagged dry_run; write no plans tables")
        if stage == "plan":
            p.add_argument("--max-migrations", type=int, help="override the migration budget")
            p.add_argument("--time-limit", type=float, help="solver time limit in seconds")
    return parser


def _run(args: argparse.Namespace) -> tuple[str, int]:
    from jobs import run as stages

    if args.stage == "collect":
        return stages.run_collect(args.job, args.period_end), 0
    if args.stage == "validate":
        return stages.run_validate(args.job, args.period_end), 0
    if args.stage == "plan":
        r = stages.run_plan(args.job, args.period_end, strategy=args.strategy,
                            max_migrations=args.max_migrations, time_limit_s=args.time_limit,
                            dry_run=args.dry_run)
        return r.summary(), 0  # the strategy's own objective first (jobs/plan/record.py)
    if args.stage == "publish":
        pub = stages.run_publish(args.job, args.period_end)
        return f"publish {args.job}@{pub.period_end}: {pub.status}, version {pub.version}", 0
    from jobs.plan.fleet import run_fleet

    jobs = args.jobs.split(",") if args.jobs else None
    result = run_fleet(args.period_end, job_ids=jobs, strategy=args.strategy,
                       dry_run=args.dry_run)
    return result.summary(), 1 if result.failed else 0  # 1: a job's solver failed


def submit_command(master: str, *stage_args: str) -> list[str]:
    """The full spark-submit command line running `stage_args` (e.g. "collect", "--job", …)."""
    from jobs.spark.session import submit_settings

    settings = submit_settings()
    conf = settings["conf"]
    assert isinstance(conf, dict)
    spark_submit = Path(sys.executable).with_name("spark-submit")
    return [str(spark_submit), "--master", master, "--jars", str(settings["jars"]),
            *(a for k, v in conf.items() for a in ("--conf", f"{k}={v}")),
            str(Path(__file__).resolve()), *stage_args]


def _print_submit_args() -> None:
    from jobs.spark.session import submit_settings

    settings = submit_settings()
    conf = settings["conf"]
    assert isinstance(conf, dict)
    print(" ".join([f"--jars {settings['jars']}",
                    *(f"--conf {k}={v}" for k, v in conf.items())]))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.print_submit_args:
        _print_submit_args()
        return 0
    if args.stage is None:
        _parser().print_help()
        return 2
    from jobs.spark.session import get_spark
    from schemas.config import Paths
    from schemas.errors import ReconfError

    try:
        spark = get_spark(Paths.from_env(), master=args.master)  # the stages reuse this session
        try:
            text, code = _run(args)
            print(text, flush=True)
        finally:
            spark.stop()
    except (ReconfError, ValueError) as exc:  # refused input; a ValueError: a check not yet typed
        print(f"jobs/submit.py {args.stage}: error: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
