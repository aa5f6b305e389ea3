"""Rate limits and usage: learned from providers (`headers`), set by the user
(`user_limits`), counted (`counters`, in memory or Redis), enforced before a
call goes out (`enforce.Limiter`, `runtime.limiter`), rests after a 429
(`rest`), and read back as quotas (`ledger`, `quotas`)."""
