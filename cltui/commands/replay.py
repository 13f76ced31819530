"""``cltui replay DUMPDIR RANGE``: replay a range of enqueues on devices and compare."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

import click

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from cltui.replay.engine.schema import CheckResult, DeviceChoice, Manifest, Report

from cltui.capture.textfmt import fmt_ns
from cltui.commands._common import (
    EXIT_BAD_INPUT,
    EXIT_MISMATCH,
    echo,
    emit_json,
    escape_tree,
    fail,
)


def parse_arg_tol(specs: tuple[str, ...]) -> dict[int, dict[str, Any]]:
    """``2:ulp=4,atol=1e-6`` -> {2: {"ulp": 4, "atol": 1e-6}}."""
    out: dict[int, dict[str, Any]] = {}
    for spec in specs:
        head, sep, body = spec.partition(":")
        if not sep or not head.strip().isdigit() or not body:
            raise ValueError(f"bad --arg-tol {spec!r}: expected INDEX:KEY=VALUE[,KEY=VALUE]")
        entry = out.setdefault(int(head), {})
        for item in body.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or key not in ("atol", "rtol", "ulp"):
                raise ValueError(f"bad --arg-tol {spec!r}: keys are atol, rtol and ulp")
            try:
                entry[key] = int(value) if key == "ulp" else float(value)
            except ValueError:
                raise ValueError(f"bad --arg-tol {spec!r}: {value!r} is not a number") from None
    return out


@click.command("replay")
@click.argument("dumpdir", type=click.Path())
@click.argument("range_text", metavar="RANGE")
@click.option(
    "--device",
    "-d",
    "devices",
    multiple=True,
    help="P:D index or name substring (pocl, oclgrind); repeat for several devices.",
)
@click.option(
    "--mode",
    type=click.Choice(["chain", "isolated", "strict"]),
    default="chain",
    show_default=True,
    help="chain: carry state, reload at host-side changes; isolated: each kernel from its "
    "own Pre dumps; strict: never reload.",
)
@click.option(
    "--repeat",
    type=click.IntRange(1, 100000),
    default=1,
    show_default=True,
    help="Launch the range N times (inputs restored) for timing statistics.",
)
@click.option("--atol", type=float, default=None, help="Absolute tolerance (floats).")
@click.option("--rtol", type=float, default=None, help="Relative tolerance (floats).")
@click.option("--ulp", type=click.IntRange(0), default=None, help="ULP tolerance (floats).")
@click.option(
    "--arg-tol",
    "arg_tol",
    multiple=True,
    metavar="I:KEY=V[,KEY=V]",
    help="Tolerance for argument I only, e.g. 0:ulp=2.",
)
@click.option(
    "--timeout",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds without progress before a device is declared hung.",
)
@click.option(
    "--outputs",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep the replayed outputs in this folder.",
)
@click.option(
    "--probe",
    is_flag=True,
    help="Flag outputs that vary across the --repeat repetitions on one device "
    "(nondeterminism); at least 2 repetitions.",
)
@click.option("--json", "as_json", is_flag=True, help="The full report as JSON.")
def replay_cmd(
    dumpdir: str,
    range_text: str,
    devices: tuple[str, ...],
    mode: str,
    repeat: int,
    atol: float | None,
    rtol: float | None,
    ulp: int | None,
    arg_tol: tuple[str, ...],
    timeout: float,
    outputs: str | None,
    probe: bool,
    as_json: bool,
) -> None:
    """Replay the kernel enqueues of RANGE (12, 12-40, 12-, 12-40/saxpy) on devices.

    Each enqueue's results are compared, argument by argument, with the capture's Post
    dumps (and devices with each other).  Exit 0 when every kernel enqueue was replayed and
    every output checked and equal (PASS), 1 on a mismatch, a crash or a hang, 2 on bad
    input, 3 when nothing failed but something was skipped, unchecked or not replayed.
    With --probe, also 1 when an output varies across the repetitions.
    """
    from cltui.capture.ranges import RangeError, parse_range
    from cltui.commands._common import load_capture
    from cltui.replay import runner
    from cltui.replay.devices import DeviceError, select_devices
    from cltui.replay.engine import choice_line, user_choice
    from cltui.replay.engine.compare import Tolerance
    from cltui.replay.plan import PlanError, build_plan

    try:
        rng = parse_range(range_text)
        per_arg = parse_arg_tol(arg_tol)
    except (RangeError, ValueError) as exc:
        fail(str(exc))
    if timeout <= 0:
        fail("--timeout must be positive")
    cap = load_capture(dumpdir, quiet=as_json)
    tol = Tolerance(atol or 0.0, rtol or 0.0, ulp or 0)
    try:
        plan = build_plan(cap, rng, mode, tol, per_arg)
    except PlanError as exc:
        fail(str(exc))
    try:
        if devices:
            chosen, choice = select_devices(list(devices)), user_choice(devices)
        else:
            chosen, choice = default_devices(cap, plan.steps)
    except DeviceError as exc:
        fail(str(exc))
    echo(f"device: {choice_line(chosen, choice)}", err=True)
    manifest = plan.to_manifest()
    if probe:
        repeat = max(repeat, 2)
    job = runner.start(
        manifest,
        chosen,
        data_root=cap.path,
        repeat=repeat,
        arg_tolerance=per_arg,
        timeout=timeout,
        save_dir=outputs,
        probe=probe,
    )
    show_progress = not as_json and sys.stderr.isatty()
    try:
        for ev in job.events():
            if ev["type"] == "device" and not as_json:
                echo(
                    f"replaying {len(plan.steps)} enqueues on {ev['device']} {ev['name']} ...",
                    err=True,
                )
            elif ev["type"] == "step" and show_progress:
                click.echo(  # numbers only; the \r redraws the progress line
                    f"\r  {ev['i'] + 1}/{ev['n']} enqueue {ev['enqueue']}   ", err=True, nl=False
                )
            elif ev["type"] == "device_done" and show_progress:
                echo("", err=True)
    except KeyboardInterrupt:  # ctrl-c, SIGTERM: stop the child, remove the outputs
        job.cancel()
        if outputs is None:
            job.cleanup()
        fail("interrupted", 130)
    report = job.report
    assert report is not None
    for res in report["devices"]:
        res["device_choice"] = cast("DeviceChoice", choice)
    probes = probe_report(report, manifest) if probe else None
    if outputs is None:
        job.cleanup()
        report["outputs"] = None
        for res in report["devices"]:
            for st in res.get("steps", []):
                for c in st["checks"]:
                    c["output"] = None
            res.pop("probe", None)  # its files are gone
    deterministic = True
    if probes is not None:
        report["probe"] = [p.to_dict() for p in probes]
        deterministic = all(p.deterministic for p in probes)
    if as_json:
        emit_json(report)
    else:
        print_report(report, manifest)
        if probes is not None:
            print_probe(probes)
    sys.exit(exit_code(report, deterministic))


def exit_code(report: Report, deterministic: bool = True) -> int:
    """The verdict's exit code (0 pass, 1 fail, 3 incomplete); a nondeterministic output
    found by --probe fails."""
    from cltui.replay.engine import verdict_exit

    code = verdict_exit(str(report["verdict"]["status"]))
    return EXIT_MISMATCH if not deterministic else code  # a failure dominates incomplete


def probe_report(report: Report, manifest: Manifest) -> list[Any]:
    """One :class:`~cltui.analysis.probe.ProbeReport` per device that ran (``--probe``)."""
    from cltui.analysis.probe import meta_of, probe_outputs
    from cltui.replay.runner import probe_runs

    meta = meta_of(manifest)
    out = []
    for res in report["devices"]:
        runs = probe_runs(res)
        rep = probe_outputs(runs, meta)
        if res.get("error"):
            rep.errors.append(str(res["error"]))
        elif not runs:
            rep.errors.append("the device result holds no probed outputs")
        rep.device = f"{res['device']['id']} {res['device']['name']}"
        out.append(rep)
    return out


def print_probe(probes: list[Any]) -> None:
    """``--probe``: per device, deterministic or each varying output with its figures."""
    for p in probes:
        if p.deterministic:
            echo(f"probe {p.device}: deterministic ({p.outputs} outputs, {p.runs} runs)")
            continue
        if p.varying:
            echo(f"probe {p.device}: NONDETERMINISTIC ({len(p.varying)} of {p.outputs} "
                       f"outputs vary over {p.runs} runs)")
        else:
            echo(f"probe {p.device}: undecided (a run failed)")
        for v in p.varying:
            echo(f"  enqueue {v.enqueue} {v.meta.kernel} {v.meta.label}: {v.summary()}")
        for e in p.errors:
            echo(f"  error: {e}")
    for p in probes:
        for m in p.missing:
            echo(f"probe {p.device}: {m}")


def default_devices(
    cap: Any, steps: Sequence[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Without ``--device``: the device the capture ran on when it is here, else the one
    named most like it, else the first that is not a simulator, else the first (the rule of
    :func:`cltui.replay.engine.choose_device`, which the bundles follow too), and why."""
    from cltui.capture.devinfo import captured_devices
    from cltui.replay.devices import DeviceError, default_device, list_devices

    names = [n for n in dict.fromkeys(str(s.get("device") or "") for s in steps) if n]
    captured: list[dict[str, Any] | str] = [dict(i) for i in captured_devices(cap.log, names)]
    dev, choice = default_device(list_devices(), captured)
    if dev is None:
        raise DeviceError(choice["why"] + " (is an ICD installed?)")
    return [dev], choice


MAX_NOTES = 20

_STYLE = {"equal": "green", "within": "yellow", "different": "bold red", "unchecked": "dim"}


def _short(c: CheckResult) -> str:
    """A table cell: the status and the key figure."""
    res: Mapping[str, Any] = c.get("result") or {}
    if c["status"] in ("equal", "unchecked"):
        return str(c["status"])
    if not res:  # compared by hash: no element counts
        return f"{c['status']} (hash)"
    text = f"{c['status']} {res.get('n_diff', '?')}/{res.get('elements', '?')}"
    if res.get("max_ulp") is not None:
        text += f" {_num(res['max_ulp'])} ULP"
    return text


def _num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def print_report(report: Report, manifest: Manifest) -> None:
    """Rich tables: checks per enqueue x argument x device, host changes, timing."""
    from rich.console import Console
    from rich.table import Table

    con = Console()
    report, manifest = escape_tree(report), escape_tree(manifest)  # names from the capture
    devs = report["devices"]
    plan = report["plan"]
    con.print(
        f"[bold]range {plan['range']}[/] mode {plan['mode']}, {plan['steps']} enqueues, "
        f"{len(devs)} device(s)"
    )
    print_verdict(con, report)
    notes = plan["notes"]
    for note in notes[:MAX_NOTES]:
        con.print(f"note: {note}", soft_wrap=True, markup=False, highlight=False, style="dim")
    if len(notes) > MAX_NOTES:
        con.print(
            f"... and {len(notes) - MAX_NOTES} more notes (--json lists them all)", style="dim"
        )
    for ch in plan["changes"]:
        by = ", ".join(ch["by"]) if ch["by"] else "something outside the replayed kernels"
        act = _ACTIONS.get(ch["action"], ch["action"])
        con.print(
            f"host-side change before enqueue {ch['enqueue']}: {ch['label']} "
            f"changed after enqueue {ch['after']} (by {by}); {act}",
            soft_wrap=True,
            markup=False,
            highlight=False,
            style="cyan",
        )
    for r in devs:
        d = r["device"]
        if r.get("error"):
            con.print(f"[bold red]{d['id']} {d['name']}: {r['status']}: {r['error']}[/]")
            if r.get("stderr"):
                con.print(f"[dim]{r['stderr'][-600:]}[/]")

    seen: dict[str, list[str]] = {}
    for r in devs:
        for note in r.get("notes", []):
            seen.setdefault(note, []).append(r["device"]["id"])
    for note, ids in seen.items():
        con.print(
            f"{', '.join(ids)} note: {note}",
            soft_wrap=True,
            markup=False,
            highlight=False,
            style="dim",
        )
    table = Table(title="results against the capture")
    table.add_column("enqueue", justify="right")
    table.add_column("kernel", overflow="fold")
    table.add_column("argument", overflow="fold")
    for r in devs:
        table.add_column(r["device"]["id"])
    rows: dict[tuple[int, str], list[str]] = {}
    order: list[tuple[int, str, str]] = []
    details: list[str] = []
    for col, r in enumerate(devs):
        for st in r.get("steps", []):
            pres = st.get("prechecks", [])
            for c in [*pres, *st["checks"]]:
                pre = any(c is p for p in pres)
                label = ("before: " if pre else "") + c["label"]
                key = (st["enqueue"], label)
                if key not in rows:
                    rows[key] = [""] * len(devs)
                    order.append((st["enqueue"], st["kernel"] or "?", label))
                style = "cyan" if pre else _STYLE.get(c["status"], "")
                rows[key][col] = f"[{style}]{_short(c)}[/]" if style else _short(c)
                if c["status"] != "equal":
                    details.append(
                        f"{r['device']['id']} enqueue {st['enqueue']} {label}: {c['status']}: "
                        f"{c.get('summary', '')}"
                    )
    for enq, kernel, label in order:
        table.add_row(str(enq), kernel, label, *rows[(enq, label)])
    if order:
        con.print(", ".join(f"{r['device']['id']} = {r['device']['name']}" for r in devs))
        con.print(table)
    for line in details:
        con.print(line, soft_wrap=True, markup=False, highlight=False)

    timing = Table(
        title=f"timing (median of {report['repeat']} run(s); captured = the capture's "
        "own device time)"
    )
    timing.add_column("enqueue", justify="right")
    timing.add_column("kernel")
    timing.add_column("captured", justify="right")
    for r in devs:
        timing.add_column(f"{r['device']['id']} kernel", justify="right")
        timing.add_column("host enqueue", justify="right")
    captured = {s["enqueue"]: s.get("captured_time") for s in manifest["steps"]}
    steps_by_dev = [{st["enqueue"]: st for st in r.get("steps", [])} for r in devs]
    for s in manifest["steps"]:
        n = s["enqueue"]
        cells = [str(n), s["kernel"], fmt_ns((captured.get(n) or {}).get("start_to_end"), "-")]
        for sd in steps_by_dev:
            ran = sd.get(n)
            if ran is None:
                cells += ["-", "-"]
                continue
            kern, host = ran["timing"]["start_to_end"], ran["timing"]["host_enqueue"]
            cells.append(fmt_ns(kern["median"] if kern else None, "-"))
            cells.append(fmt_ns(host["median"] if host else None, "-"))
        timing.add_row(*cells)
    if any(r.get("steps") for r in devs):
        con.print(timing)
        if report["repeat"] > 1:
            stages = ("queued_to_submit", "submit_to_start", "start_to_end", "host_enqueue")
            for r in devs:
                if not r.get("steps"):
                    continue
                stats = Table(
                    title=f"{r['device']['id']} {r['device']['name']}: min / median / max "
                    f"over {report['repeat']} runs"
                )
                stats.add_column("enqueue", justify="right")
                for title in ("queued->submit", "submit->start", "start->end", "host enqueue"):
                    stats.add_column(title, justify="right", no_wrap=True)
                for st in r["steps"]:
                    cells = [str(st["enqueue"])]
                    for stage in stages:
                        v = cast("Mapping[str, Any]", st["timing"]).get(stage)
                        cells.append(
                            " / ".join(fmt_ns(v[k], "-") for k in ("min", "median", "max"))
                            if v
                            else "-"
                        )
                    stats.add_row(*cells)
                con.print(stats)
                loop_info: dict[str, Any] = r.get("loop") or {}
                loop = loop_info.get("host_ns_per_repetition")
                if loop:
                    per = loop["median"] / max(int(r["loop"]["launches"]), 1)
                    per_text = fmt_ns(per, "-")
                    con.print(f"host time per launch in the timing loop: {per_text} (median)")

    if report["cross"]:
        same = sum(1 for c in report["cross"] if c["status"] == "equal")
        con.print(f"devices against each other: {same}/{len(report['cross'])} outputs bit-exact")
        for x in report["cross"]:
            if x["status"] != "equal":
                con.print(
                    f"  enqueue {x['enqueue']} {x['kernel']} {x['label']}: {x['a']} vs "
                    f"{x['b']}: {x['status']}: {x['summary']}",
                    soft_wrap=True,
                    markup=False,
                    highlight=False,
                )
    print_verdict(con, report, details=False)


_ACTIONS = {
    "reload": "reloaded from the capture",
    "none": "not reloaded (strict)",
    "replay": "replayed",
    "unreplayed": "NOT replayed (its data is not in the capture)",
}
_VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "error": "bold red"}


def print_verdict(con: Any, report: Report, details: bool = True) -> None:
    """The verdict line, per device when there are several, and (``details``) each host
    transfer that was not replayed: never collapsed."""
    v = report["verdict"]
    style = _VERDICT_STYLE.get(v["status"], "bold yellow")
    con.print(v["line"], style=style, soft_wrap=True, markup=False, highlight=False)
    devs = report["devices"]
    if len(devs) > 1 and details:
        for r in devs:
            d = r.get("verdict") or {}
            con.print(
                f"  {r['device']['id']} {r['device']['name']}: {d.get('line', '')}",
                soft_wrap=True,
                markup=False,
                highlight=False,
            )
    for r in devs[: 1 if details else 0]:
        for st in r.get("steps", []):
            for t in st.get("transfers", []):
                if not t.get("replayed"):
                    con.print(
                        f"host transfer {t['enqueue']} {t['function']} before enqueue "
                        f"{st['enqueue']}: not replayed ({t['why']})",
                        soft_wrap=True,
                        markup=False,
                        highlight=False,
                        style="yellow",
                    )


__all__ = ["EXIT_BAD_INPUT", "replay_cmd"]
