"""`kafka-chaos explore`'s pure parts: the fault space an experiment declares (space.py), what it can never
draw on this experiment (check.py), drawing and mutating schedules from it (generate.py), what a try's outcome
says went wrong and what it saw (signature.py), and the tries kept because they saw something new (corpus.py).

Nothing here starts a process or reads a file: the exploration loop (the CLI's) runs the tries and hands
their summaries and logs in.
"""
