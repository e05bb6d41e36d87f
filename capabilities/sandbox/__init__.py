"""sandbox — a workspace of files that survives between turns (backend state: this database)."""

# Nothing is imported here: capabilities/models.py imports this package's models while Django loads the apps, and
# the capability (registry.BUILTIN: capabilities.sandbox.capability) needs those models loaded.
