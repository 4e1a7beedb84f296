"""The Discord front end (named so it cannot shadow the `discord` package)."""
