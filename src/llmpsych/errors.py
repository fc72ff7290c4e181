"""User-facing errors: each one prints as a single clear line on the command line."""


class LlmpsychError(Exception):
    """An error caused by the user's input or environment, reported without a traceback."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class RunInterrupted(LlmpsychError):
    """The user stopped a run (Ctrl-C); every answer received is saved and the run can be resumed."""

    exit_code = 130


class ConfigError(LlmpsychError):
    """A run configuration or the user config file is malformed."""


class ModelSpecError(LlmpsychError):
    """A model specification cannot be understood or resolved."""


class MissingKeyError(LlmpsychError):
    """An endpoint needs an API key that is not in the environment or the config file."""


class EndpointError(LlmpsychError):
    """An endpoint is unreachable or keeps failing after bounded retries."""

    exit_code = 3


class DataError(LlmpsychError):
    """A data folder or data file is missing or malformed."""


class ChecksumError(DataError):
    """A file's sha256 does not match the expected value."""
