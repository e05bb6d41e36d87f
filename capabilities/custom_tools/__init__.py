"""custom_tools — named REST tools defined in the console, offered to an agent by id."""

# Nothing is imported here: capabilities/models.py imports this package's models while Django loads the apps, and
# the capability (registry.BUILTIN: capabilities.custom_tools.capability) needs those models loaded.
