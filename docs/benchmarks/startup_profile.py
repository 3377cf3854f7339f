"""Where a training run's start-up goes (issue 31): from the process's launch to the end of its first iterations.

``scripts/train.py``'s own steps are wrapped (for this script only; nothing in robolab changes) so that the wall clock
is read when each begins and ends, counted from the process's launch as the kernel records it (the interpreter's
own start included): the imports, joining the run (config, process group, seeds), opening the env (MuJoCo's model,
MuJoCo Warp's model and kernels), building the runner, the run directory, and then, per iteration, the collection,
the update and the checkpoint. The two CUDA graphs' captures are timed too (``recording``). ``--cprofile`` adds
cProfile's view of the same start-up (its functions by cumulative time; profiling slows Python, so the timed pass is
the one to quote and this one says where inside a step the time goes).

    python docs/benchmarks/startup_profile.py --output startup.json -- --device cuda --num_envs 4096 \
        env.backend=warp env.cuda_graph=true agent.algorithm.cuda_graph=true
"""

import time

IMPORTS_BEGIN = time.time()  # before torch, robolab and the rest are imported

import argparse  # noqa: E402
import contextlib  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402


def launched_at() -> float:
    """The process's start on the wall clock (Linux: /proc, 10 ms steps); elsewhere the script's first line."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return IMPORTS_BEGIN


class Stamps:
    """Named spans (begin, end) in seconds from launch; a name that recurs is numbered (``collect`` #2 ...)."""

    def __init__(self, launch: float):
        self.launch = launch
        self.spans: list[dict] = []

    def add(self, name: str, begin: float, end: float) -> None:
        count = sum(1 for span in self.spans if span["name"].split(" #")[0] == name)
        label = name if count == 0 else f"{name} #{count + 1}"
        self.spans.append(
            {"name": label, "begin_s": round(begin - self.launch, 3), "end_s": round(end - self.launch, 3)}
        )

    def wrap(self, owner, attribute: str, name: str) -> None:
        """``owner.attribute`` (a function or method) stamped each time it runs."""
        original = getattr(owner, attribute)

        def stamped(*args, **kwargs):
            begin = time.time()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(name, begin, time.time())

        setattr(owner, attribute, stamped)

    def wrap_context(self, owner, attribute: str, name: str) -> None:
        """``owner.attribute`` (a context manager factory) stamped from entry to exit."""
        original = getattr(owner, attribute)

        @contextlib.contextmanager
        def stamped(*args, **kwargs):
            begin = time.time()
            try:
                with original(*args, **kwargs) as value:
                    yield value
            finally:
                self.add(name, begin, time.time())

        setattr(owner, attribute, stamped)


def instrument(stamps: Stamps) -> None:
    """The start-up's steps and the first iterations' phases, stamped."""
    from robolab import runs, session
    from robolab.algorithms import captured_update
    from robolab.envs import captured_step
    from robolab.runners.on_policy_runner import OnPolicyRunner

    for name in ("join", "env_config", "open_env", "report_kernel_cache", "build_runner"):
        stamps.wrap(session, name, name)
    stamps.wrap(runs, "claim_run_dir", "claim_run_dir")
    stamps.wrap(OnPolicyRunner, "_collect", "collect")
    stamps.wrap(OnPolicyRunner, "_save_iteration", "save")
    stamps.wrap_context(captured_step, "recording", "capture: env step graph")
    stamps.wrap_context(captured_update, "recording", "capture: update graph")

    original_learn = OnPolicyRunner.learn

    def learn(runner, *args, **kwargs):  # the update is stamped on the instance: its class depends on the config
        stamps.wrap(runner.alg, "update", "update")
        return original_learn(runner, *args, **kwargs)

    OnPolicyRunner.learn = learn


def top_functions(profiler: cProfile.Profile, count: int) -> str:
    """cProfile's ``count`` functions with the most cumulative time, as pstats prints them."""
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(count)
    return out.getvalue()


def main() -> int:
    """Train ``--iterations`` iterations with ``train.py``'s flags after ``--``; write the spans as JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output", required=True, help="JSON file for the spans (and cProfile's text with --cprofile)")
    p.add_argument("--iterations", type=int, default=2, help="iterations to train (the update graph is captured at 2)")
    p.add_argument("--cprofile", action="store_true", help="also profile the start-up with cProfile (slower)")
    p.add_argument("--top", type=int, default=45, help="functions of cProfile's listing")
    args, train_args = p.parse_known_args()
    train_args = [a for a in train_args if a != "--"]
    launch = launched_at()
    profiler = cProfile.Profile() if args.cprofile else None
    if profiler is not None:
        profiler.enable()
    import robolab.cli.train as train_cli  # the imports train.py pays for

    imports_end = time.time()
    stamps = Stamps(launch)
    stamps.add("interpreter", launch, IMPORTS_BEGIN)
    stamps.add("imports", IMPORTS_BEGIN, imports_end)
    instrument(stamps)
    with tempfile.TemporaryDirectory() as logs:
        argv = [*train_args, "--max_iterations", str(args.iterations), "--log_root", logs]
        status = train_cli.main(argv)
    end = time.time()
    if profiler is not None:
        profiler.disable()
    result = {
        "command": ["train.py", *train_args],
        "iterations": args.iterations,
        "exit_status": status,
        "wall_s": round(end - launch, 3),
        "first_iteration_done_s": next((s["end_s"] for s in stamps.spans if s["name"] == "save"), None),
        "spans": stamps.spans,
        "profiled": profiler is not None,
    }
    if profiler is not None:
        result["cprofile_top"] = top_functions(profiler, args.top)
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1)
    width = max(len(s["name"]) for s in stamps.spans)
    for span in stamps.spans:
        took = span["end_s"] - span["begin_s"]
        print(f"{span['name']:{width}s} {span['begin_s']:8.2f} -> {span['end_s']:8.2f} s  ({took:6.2f} s)")
    print(f"first iteration saved {result['first_iteration_done_s']} s after launch; whole run {result['wall_s']} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
