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
