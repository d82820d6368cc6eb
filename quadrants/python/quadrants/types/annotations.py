"""Parameter annotations: template() / Template for compile-time
parameters."""
from quadrants.lang.types import Template, template

__all__ = ["template", "Template"]
