"""The scenario file: its format (YAML with line numbers), the schema, and validation into a
Scenario.
"""
