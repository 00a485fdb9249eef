"""`python -m pgkgrag`: the command line, for environments whose scripts are not on PATH."""

from pgkgrag.cli.main import main

main(prog_name="pgkgrag")
