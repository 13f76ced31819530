"""The ``cltui`` command line: a thin click group.

``cltui DUMPDIR [DUMPDIR_B]`` opens the TUI; every other action is a subcommand
living in its own module under :mod:`cltui.commands`, imported only when that
command runs (``cltui --help`` imports none of textual, pyopencl or numpy).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from cltui.errors import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, Cancelled, CltuiError

# name -> (module, attribute, one-line help).  Help text lives here so that
# ``cltui --help`` needs no command module at all.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "open": ("cltui.commands.open", "open_cmd", "Open the app on a capture (the default action)."),
    "demo": ("cltui.commands.demo", "demo_cmd", "Open the app on the bundled real capture."),
    "info": ("cltui.commands.info", "info_cmd", "Summarise a capture: programs, devices, counts."),
    "ls": ("cltui.commands.ls", "ls_cmd", "List enqueues, one row each."),
    "show": ("cltui.commands.show", "show_cmd", "Everything known about one enqueue."),
    "devices": ("cltui.commands.devices", "devices_cmd", "List the OpenCL devices replay can use."),
    "replay": ("cltui.commands.replay", "replay_cmd", "Replay a range of enqueues on devices."),
    "export": ("cltui.commands.export", "export_cmd", "Export a range as a standalone bundle."),
    "diverge": ("cltui.commands.diverge", "diverge_cmd", "Find where two captures diverge."),
    "check": ("cltui.commands.check", "check_cmd", "Replay a range on Oclgrind with its checks."),
    "shrink": ("cltui.commands.shrink", "shrink_cmd", "Shrink a failing range to its core."),
    "explain": ("cltui.commands.explain", "explain_cmd", "Where and why two devices' outputs "
                "of an enqueue differ."),
    "fleet": ("cltui.commands.fleet", "fleet_cmd", "Replay a range on many hosts over ssh."),
    "feasible": (
        "cltui.commands.feasible", "feasible_cmd", "What of a range cannot run on a device."
    ),
    "try": ("cltui.commands.try_cmd", "try_cmd", "A range with changes against the capture (A/B)."),
    "sweep": ("cltui.commands.sweep", "sweep_cmd", "Try many configurations of a range, ranked."),
    "variant": ("cltui.commands.variant", "variant_cmd", "List, show or delete saved variants."),
    "latency": ("cltui.commands.latency", "latency_cmd", "Launch latency of a range: stages, "
                "floor, sensitivity."),
    "serve": ("cltui.commands.serve", "serve_cmd", "The app in a web browser (127.0.0.1)."),
}


class CltuiGroup(click.Group):
    """Lazily imported subcommands, and ``cltui PATH`` as a shortcut for ``cltui open PATH``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, (mod, _a, _h) in COMMANDS.items() if _available(mod)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None or not _available(spec[0]):
            return None
        module = importlib.import_module(spec[0])
        cmd = getattr(module, spec[1])
        assert isinstance(cmd, click.Command)
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        """Run a command: SIGTERM acts as ctrl-c, both exit 130 after cleaning up (temp
        folders, children); folders a killed cltui stranded are swept first."""
        before = _on_start()
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, Cancelled):
            click.echo("cltui: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:  # the reader of stdout left (`| head`): quiet, not a FAIL
            _stdout_to_devnull()
            sys.exit(EXIT_BROKEN_PIPE)
        except CltuiError as exc:  # the last resort: one line, the error's exit code
            from cltui.text.escape import escape_controls

            text = " ".join(str(exc).split()) or type(exc).__name__
            click.echo(f"cltui: {escape_controls(text)}", err=True)
            sys.exit(exc.exit_code)
        except click.UsageError as exc:  # one line, not click's usage block
            where = exc.ctx.command_path if exc.ctx is not None else "cltui"
            click.echo(f"cltui: {exc.format_message()} (see '{where} --help')", err=True)
            sys.exit(EXIT_BAD_INPUT)
        finally:
            if before is not None:
                import signal

                signal.signal(signal.SIGTERM, before)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in COMMANDS and not args[0].startswith("-"):
            args = ["open", *args]
        return super().parse_args(ctx, args)


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush cannot fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (an embedding program)
        pass


def _sigterm(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _on_start() -> Any:
    """SIGTERM -> KeyboardInterrupt, and the sweep; returns the SIGTERM handler replaced."""
    import signal

    from cltui.process import lifecycle

    before = None
    try:
        before = signal.signal(signal.SIGTERM, _sigterm)
    except ValueError:  # not the main thread (an embedding program): leave signals alone
        before = None
    lifecycle.sweep()
    return before


def _available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@click.group(
    cls=CltuiGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=False,
)
@click.version_option(package_name="cltui")
def main() -> None:
    """cltui: browse, replay and export OpenCL Intercept Layer captures.

    \b
    cltui DUMPDIR            open the app on a capture
    cltui DUMP_A DUMP_B      open two captures side by side
    cltui COMMAND --help     help for one command
    """


def run() -> Any:  # pragma: no cover - console entry
    from cltui.commands import _common

    _common.STANDALONE = True
    try:
        return main(prog_name="cltui")
    finally:
        # the process ends now: what it made needs no last garbage collections, which the
        # interpreter's exit would make over every module (40-70 ms with numpy, the capture
        # model and rich); atexit handlers (temp folders) and stream flushes still run
        import gc

        gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
