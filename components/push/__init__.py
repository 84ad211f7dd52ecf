"""Push: the stock Pusher with integer, atomic, idempotent versions and retention."""
