"""The capabilities app's models. Each capability keeps its models in its own folder
(capabilities/<capability>/models.py; workspaces are their own app, workspaces/); this module imports them so Django registers them under the one
`capabilities` app (one set of migrations). Every row belongs to one organization; credentials are references
to vault secrets (or, for a database DSN, sealed with the same vault), never plaintext.
"""

from capabilities.code_execution.models import JailIdentity
from capabilities.custom_tools.models import CustomTool, ToolBuilderSession, ToolDraft, ToolKit
from capabilities.db_connections.models import DatabaseConnection
from capabilities.follow_ups.models import FollowUp
from capabilities.mcp.models import McpConnection, McpCredential
from capabilities.tool_output_limits.models import SpilledOutput

__all__ = [
    "CustomTool", "DatabaseConnection", "FollowUp", "JailIdentity", "McpConnection", "McpCredential", "SpilledOutput",
    "ToolBuilderSession", "ToolDraft", "ToolKit",
]
