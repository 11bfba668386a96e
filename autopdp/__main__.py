"""``python -m autopdp``: the same command line as ``autopdp`` (for environments without the script on PATH)."""

import sys

from .cli.commands import main

if __name__ == "__main__":
    sys.exit(main())
