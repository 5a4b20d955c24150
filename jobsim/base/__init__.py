"""Foundations every layer may use: errors, random streams, distributions, durations, the trace's
format, progress, the output folders' manifest.
"""
