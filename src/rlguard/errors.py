"""Errors a user can fix: the CLI prints them as one line and exits with code 2."""


class InputError(ValueError):
    """Bad input (a file, a field, an option). The message names where and what."""
