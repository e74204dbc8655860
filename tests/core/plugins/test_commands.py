"""Plugins add ``robohal`` subcommands through ``robohal_commands``: loaded when used, stamped
with their plugin, two claims of one name refused, the core's own names kept."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from robohal import CommandSpec, hookimpl
from robohal.cli.main import main
from robohal.errors import PluginConflictError, PluginError
from robohal.plugins.registry import registry_with, use_registry


@click.group()
def acme() -> None:
    """ACME cell tools."""


@acme.command()
@click.argument("uri")
def status(uri: str) -> None:
    click.echo(f"acme status of {uri}")


@click.command()
def fake_plugins() -> None:
    click.echo("a plugin's own 'plugins'")


def commands_plugin(*specs: CommandSpec):
    class Plugin:
        @hookimpl
        def robohal_commands(self):
            return list(specs)

    return Plugin()


def test_a_plugin_command_runs_under_robohal_and_is_listed():
    registry = registry_with(("acme", commands_plugin(CommandSpec("acme", acme, "ACME cell tools"))))
    assert [spec.name for spec in registry.commands()] == ["acme"]
    assert registry.commands()[0].plugin == "acme"
    assert {info.name: info for info in registry.plugins()}["acme"].commands == ("acme",)
    with use_registry(registry):
        runner = CliRunner()
        result = runner.invoke(main, ["acme", "status", "acme://cell"])
        assert result.exit_code == 0, result.output
        assert result.output == "acme status of acme://cell\n"
        assert "acme" in runner.invoke(main, ["--help"]).output


def test_a_reference_is_imported_only_when_the_command_is_used():
    spec = CommandSpec("acme", "no_such_module_here.cli:acme")
    registry = registry_with(("acme", commands_plugin(spec)))  # listing imports nothing
    with use_registry(registry):
        result = CliRunner().invoke(main, ["acme", "status", "x"])
    assert result.exit_code == 2
    assert "cannot import 'no_such_module_here.cli:acme'" in result.output


def test_the_core_keeps_its_own_command_names():
    registry = registry_with(("acme", commands_plugin(CommandSpec("plugins", fake_plugins))))
    with use_registry(registry):
        result = CliRunner().invoke(main, ["plugins", "--json"])
    assert result.exit_code == 0 and "a plugin's own" not in result.output


def test_two_plugins_claiming_one_command_are_named():
    with pytest.raises(PluginConflictError, match=r"'first'.*'second'"):
        registry_with(("first", commands_plugin(CommandSpec("acme", acme))),
                      ("second", commands_plugin(CommandSpec("acme", acme))))


def test_a_command_that_is_not_a_click_command_is_refused():
    registry = registry_with(("acme", commands_plugin(CommandSpec("acme", print))))
    with use_registry(registry):
        result = CliRunner().invoke(main, ["acme"])
    assert result.exit_code == 2 and "not a click command" in result.output


@pytest.mark.parametrize("name", ["Acme Tools", "", "1abc", "a_b"])
def test_command_names_are_checked(name):
    with pytest.raises(PluginError, match="command name"):
        CommandSpec(name, acme)
