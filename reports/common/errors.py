"""The one error the tools report to users: bad input, printed as one line, exit code 2."""


class InputError(Exception):
    """A file that cannot be read, is not JSON, or does not match the result schema."""
