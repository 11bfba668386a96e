"""Base helpers every stage may use; they import no stage.

=====================  ==============================================================
module                 what
=====================  ==============================================================
atomic                 atomic file writes: a failed run never destroys an earlier output
formatting             numbers for people (``fmt``)
progress               progress bars on a terminal, one line per stage in a log
kernel_cache           where numba keeps the compiled kernels
secrets                credentials kept out of what is recorded and printed
xmltext                text that XML 1.0 can carry
=====================  ==============================================================
"""
