"""Mattermost adapter: WebSocket event stream, outgoing webhook, REST v4 client."""
