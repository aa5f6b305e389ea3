"""The bench: onboarding, probes, suite, decisions, catalog and the scheduler."""
