"""Evaluation jobs, monitors and alerts (see PRODUCT.md §2-3). The worker heartbeat lives in evalplatform."""
