"""One base for every mistake a user can make: the UI shows its message and stops the page."""


class UserError(ValueError):
    """Bad input, a model of the wrong kind, a failed load: the message is written for the user."""
