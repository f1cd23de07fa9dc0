"""Framework-free evaluation core: metrics, agreement, statistics and monitors.

Nothing in this package imports Django; the web apps import it, never the reverse.
"""
