"""Foundations every layer may use: errors, random streams, distributions, durations, the trace's
format, progress, the output folders' manifest.
"""

import time as _time

#: ``perf_counter`` when jobsim's import began (this package is the first of it that runs):
#: a command's ``--timings`` count from here (``phases.Phases``)
STARTED = _time.perf_counter()
