"""image_generation — `generate_image` draws with a dedicated image model (OpenAI Responses' image tool), metered
as a sub-request of the run and stored in the generated-media store."""

from capabilities.image_generation.capability import CAPABILITY

__all__ = ["CAPABILITY"]
