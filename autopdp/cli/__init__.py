"""The ``autopdp`` command line: ``demo``, ``report``, ``gate``, ``compare`` and ``warmup``.

=====================  ==============================================================
module                 what
=====================  ==============================================================
commands               the parser, each command and the exit codes (``main``)
inputs                 the data and models a command reads, checked against each other
warmup                 ``autopdp warmup``: compile the kernels into their cache
=====================  ==============================================================
"""

from .commands import main

__all__ = ["main"]
