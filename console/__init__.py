"""The web console: server-rendered screens for builders and members (templates/ + console/static/console/).

Views are thin: they resolve the organization through `request.actor` (tenancy middleware), call the same
services the REST API calls, and let those services decide permissions (`actor.require`,
`governance.grants.require_agent_access`). Templates only hide controls; the services refuse.
"""
