"""DataTable helpers shared by the screens (the key of the highlighted row)."""

from __future__ import annotations

from textual.coordinate import Coordinate
from textual.widgets import DataTable


def cursor_key(table: DataTable[object]) -> str | None:
    """The key of the row under the cursor, or None for an empty table."""
    if table.row_count == 0:
        return None
    row = min(max(table.cursor_row, 0), table.row_count - 1)
    return table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value
