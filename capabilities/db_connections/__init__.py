"""database — list_tables, describe_table and run_sql against a customer's database connection."""

# Nothing is imported here: capabilities/models.py imports this package's models while Django loads the apps, and
# the capability (registry.BUILTIN: capabilities.db_connections.capability) needs those models loaded.
