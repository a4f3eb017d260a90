"""Job entry points that the Airflow operators submit with spark-submit.

Each family (``branch``, ``tag``, ``compact``, ...) is a module here with
``main(argv) -> int``. ``launcher.py`` is the file spark-submit runs; the package
itself travels to the cluster zipped in ``--py-files``.

Contract (what the Airflow hook relies on):

* the result is printed as ONE stdout line ``PAIMON_RESULT {json}``;
* a failure prints ``PAIMON_ERROR <message>`` to stderr and exits 2 for bad input
  (a ``PaimonError``: nothing was changed) or 1 for anything else;
* secrets never come on the command line: catalog options whose values are secret
  arrive through environment variables (``PAIMON_CATALOG_OPTIONS_JSON``).
"""
