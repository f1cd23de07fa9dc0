"""CSV downloads of the dashboards' tables: the numbers a chart shows, at full precision.

The writer is the platform's one CSV writer (`evalplatform.csvexport`), which every download shares so
that no text cell opens in a spreadsheet as a formula; the views import it from here.
"""

from __future__ import annotations

from evalplatform.csvexport import cell, csv_response

__all__ = ["cell", "csv_response"]
