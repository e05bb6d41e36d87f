"""code_execution — compute with a small Python program in a locked-down subprocess."""

# Nothing is imported here: capabilities/models.py imports this package's models while Django loads the apps, and
# the capability (registry.BUILTIN: capabilities.code_execution.capability) needs those models loaded.
