"""Admin registrations for the annotation models."""
