"""Errors a user can act on: the CLI prints them as one clear message, never a traceback."""


class KgragError(Exception):
    """A problem with the user's input, configuration or environment, with what to do about it."""
