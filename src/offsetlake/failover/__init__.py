"""``offsetlake failover``: probe every cluster, refresh only if it can add anything, apply.

A feature beside ``apply`` and ``mm2_reset``, above them and the local runtime it drives:
``run.run_failover`` runs one failover.
"""
