"""Tools on top of runs: sweeps, benchmarks against queueing theory, races against real databases."""
