"""Executions: starting one (`start.py`, `launch.py`), resuming and cancelling it (`control.py`), restarting it
from a step (`restarts.py`), and reading it, its transitions, timers and trace (`reads.py`, `timers.py`,
`feeds.py`)."""
