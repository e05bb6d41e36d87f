"""Amounts the kernel stores, and their bounds."""

from decimal import Decimal

# The most a DecimalField(max_digits=12, decimal_places=4) holds: every monthly budget's ceiling (an
# organization's, an agent spec's, an embed's), checked before a save so a larger one is a clear refusal, not a
# database error.
MAX_MONTHLY_USD = Decimal("99999999.9999")
