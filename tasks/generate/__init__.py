"""The generate stage: agents write suites in the sandbox, reaching their model only through
the model channel (tasks/sandbox/channel.py). `agent` is the provided agent (docs/generate.md)."""
