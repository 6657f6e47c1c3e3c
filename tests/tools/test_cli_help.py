"""Every option of every pypto subcommand has plain-text help (no RST markup, no pass names)."""
import argparse

from pypto.cli import build_parser


def _parsers():
    root = build_parser()
    yield "pypto", root
    for action in root._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def test_every_option_has_help_in_plain_words():
    for name, parser in _parsers():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help, f"{name} {action.option_strings or action.dest}: no help text"
            assert "``" not in action.help, f"{name} {action.dest}: RST markup in help"
        text = parser.format_help()
        assert "``" not in text and "LegalizeTileCast" not in text, name


def test_the_tools_options_have_help_too():
    """The python -m pypto.tools.* commands: every option documented, no RST markup."""
    from pypto.tools import dump_viewer, ir_trace, memory_map

    for mod in (dump_viewer, ir_trace, memory_map):
        parser = mod.build_parser()
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{parser.prog} {action.option_strings or action.dest}: no help text"
        assert "``" not in parser.format_help(), parser.prog


def test_version(capsys):
    import pytest

    from pypto import __version__

    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"pypto {__version__}"
