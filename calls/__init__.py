"""Live voice calls with an agent (capability-catalog, "La columna Voz"): the realtime provider connection
(`realtime.py`), admission, tools, turns, spend and hand-offs (`service.py`), the call socket (`consumers.py`)."""
