"""The package version, one value that the facade, the CLI and every sidecar record read."""

__version__ = "0.1.0"
