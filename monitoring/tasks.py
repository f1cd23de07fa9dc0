"""Celery tasks of the monitoring app. Each takes ids or plain values and calls one service."""
