"""Slack adapter: Events API (signed webhooks), Socket Mode, and the Web API client."""
