"""Django admin for the monitoring app's models."""
