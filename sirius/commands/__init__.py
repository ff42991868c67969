"""One module per ``sirius`` subcommand; see ``sirius.cli.COMMANDS``."""
