"""Telegram adapter: webhook with a secret token we mint, long polling for development, Bot API client."""
