"""Judging projects, tasks and annotations (see PRODUCT.md §1)."""
