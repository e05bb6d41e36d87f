"""database — list_tables, describe_table and run_sql against a customer's database connection."""

from capabilities.db_connections.capability import CAPABILITY

__all__ = ["CAPABILITY"]
