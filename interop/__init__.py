"""Other clients' protocols onto the platform's runs: OpenAI-compatible Chat Completions (`/v1/`)."""
