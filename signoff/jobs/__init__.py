"""Background work: job functions that take ids, the arq worker, and the in-process runner.

The same job functions run under arq (``signoff worker``, Redis configured) and under
the in-process runner inside ``signoff serve`` (the embedded default).
"""
