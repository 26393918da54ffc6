"""`trainscope history`: every run kept in a database (SQLite or PostgreSQL), each record's series across commits."""
