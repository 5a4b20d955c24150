"""``import jobsim.plots``: the figures' module, ``jobsim.output.plots`` itself."""

import sys

from .output import plots as _plots

sys.modules[__name__] = _plots
