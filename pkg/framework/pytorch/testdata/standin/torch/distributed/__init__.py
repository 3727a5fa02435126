# The stand-in for torch in the wrapper's tests: see distributed/run.py.
