"""Figures and the report folder."""
