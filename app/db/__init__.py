"""The database: stored answers, instructor annotations and their history, users, sessions.

``models`` (SQLAlchemy tables), ``session`` (engine, transactions, migrations to head),
``store`` (the repository functions the routes and the CLI call), ``exchange`` (CSV and
report-record export and import, pure).
"""
