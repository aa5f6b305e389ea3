"""The fake provider's fixtures, as any test module would use them."""
