"""The executor: a node's core and its parts, handlers, retry policies, the settings, and the
policy presets.
"""
