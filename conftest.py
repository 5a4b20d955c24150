"""The test suite runs the notebooks small: ``jobsim.fast()`` reads this (the committed
notebooks are executed full size by ``python tools/run_notebooks.py``)."""

import os

os.environ.setdefault("JOBSIM_FAST", "1")
