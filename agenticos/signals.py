"""What the kernel tells the apps above it, so it never imports them (docs/architecture.md, "The map").

`member_removed(sender=Organization, organization, user_id)`: sent inside the removing transaction, after the
member's API keys are revoked; a receiver drops what that person held in the organization (grants on agents,
on collections) in the same transaction, so a removal is whole or nothing. Apps connect in their `ready()`.
"""

from django.dispatch import Signal

member_removed = Signal()
