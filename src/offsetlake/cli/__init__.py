"""The ``offsetlake`` command line: a thin floor over typed functions.

Each command module parses its flags into a frozen request, calls one typed function
(``run_apply``, ``run_pipeline``, ``run_sql``) and hands the result to ``render``; ``main`` maps
the one error family (offsetlake.errors) to exit statuses. Nothing below this package parses
arguments or prints for an operator.
"""
