"""The names a history is found by, apart from database.py so that the reports tool's parser (built for every
subcommand) can name them in its help without importing SQLAlchemy, which only the history's commands need."""

DEFAULT_FILE = "trainscope-history.sqlite"
ENV = "TRAINSCOPE_HISTORY"
