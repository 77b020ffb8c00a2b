"""The console's one table: a DataTable that fits its columns to every value, filters with ``/``, moves to the first and
last row with Home and End, and (for logs) follows the newest row unless the operator moved up.

Why a subclass: DataTable sizes a column to the values it had when rows were added, and ``update_cell`` keeps that
width, so a status that grows from "● up" to "✖ failed" showed as "✖ fai". Every update here widens the column. The
filter keeps every row (``has_row``, ``update_cell`` and ``remove_row`` work on hidden rows too) and shows the ones
whose text contains what the operator typed; one implementation, used by every screen's tables.

Cells are plain text, never markup: a caller named ``[red]x`` or a tool argument holding ``[/]`` shows as typed
(DataTable parses a ``str`` cell as Rich markup, which restyles it or raises on an unmatched tag), and a table with
50 live calls is not re-parsed on every repaint. An update with the value a cell already holds does nothing
(DataTable redraws every row on any update).

A table may name one free-text column its ``flex`` column (a reason, a list of places): the other columns keep their
values' width, and the flex column gets the room that is left, its cells ending in "…" when cut (the screen shows the
whole value of the selected row elsewhere), even narrower than its heading when the other columns leave less.
Without one, a long reason pushed the columns after it off the table.
A table may also name ``short`` headings (Duration as "Dur"): they replace the columns' own while the table would
otherwise be wider than its room (80 columns), since a heading wider than its values costs cells on every row.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual.widget import Widget
from textual.widgets import DataTable, Input
from textual.widgets.data_table import CellType, ColumnKey, RowKey

#: The ids of the table and filter keys (listed in ``console.bindings.SCREEN_BINDING_IDS`` too).
TABLE_BINDING_IDS = ("table_filter", "table_first", "table_last", "filter_clear")


def cursor_key(table: DataTable[Any]) -> str | None:
    """The key of the row under the cursor, or None for an empty table."""
    if table.row_count == 0:
        return None
    row = min(max(table.cursor_row, 0), table.row_count - 1)
    return table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value


def cell_text(value: object) -> str:
    """What a cell says, as plain text (for the filter)."""
    return value.plain if isinstance(value, Text) else str(value)


def plain_cell(value: Any) -> Any:
    """A ``str`` cell as literal ``Text`` (no markup); any other renderable as it is."""
    return Text(value) if isinstance(value, str) else value


def ellipsized(value: Any) -> Any:
    """A text cell that ends in "…" when its column is narrower than it (one line, never wrapped)."""
    if isinstance(value, Text):
        value.no_wrap = True
        value.overflow = "ellipsis"
    return value


def same_cell(old: object, new: object) -> bool:
    """Whether a cell would look the same: equal text and style (``Text`` compares by identity otherwise)."""
    if isinstance(old, Text) and isinstance(new, Text):
        return old.plain == new.plain and old.style == new.style and old.spans == new.spans
    return type(old) is type(new) and old == new


class TableFilter(Input):
    """The one-line filter under a table: typing narrows the rows, Enter goes back to the table, Esc clears."""

    DEFAULT_CSS = """
    TableFilter { height: 1; border: none; padding: 0 1; background: $boost; }
    TableFilter:focus { border: none; background: $accent 20%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear_filter", "Clear filter", id="filter_clear"),
    ]

    def __init__(self, table: ConsoleTable) -> None:
        super().__init__(placeholder="filter rows (Enter: back to the table · Esc: clear)", classes="table-filter")
        self.table = table

    def action_clear_filter(self) -> None:
        self.table.close_filter()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()  # the table's business, not the screen's
        self.table.set_filter(event.value.strip())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip():
            self.table.focus()
        else:
            self.table.close_filter()


class ConsoleTable(DataTable[Any]):
    """A DataTable whose columns fit every value, with a ``/`` filter, Home/End, and optional follow-the-newest."""

    #: The focused table is marked by an accent bar down its left edge (an outline: it takes no column, and shows
    #: over a table's own border too).
    DEFAULT_CSS = """
    ConsoleTable:focus { outline-left: thick $accent; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", id="table_filter", show=False),  # in the key help (?) and palette
        Binding("home", "first_row", "First row", id="table_first", show=False),
        Binding("end", "last_row", "Last row", id="table_last", show=False),
    ]

    def __init__(
        self,
        *args: Any,
        follow: bool = False,
        filterable: bool = True,
        flex: str | None = None,
        short: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        #: The key of the free-text column that takes the room the others leave (cut with "…"), or None.
        self.flex = flex
        #: Shorter headings by column key, shown while the columns with their own would not fit the table.
        self.short = dict(short or {})
        self._own_labels: dict[str, Text] = {}
        #: Move the cursor to a new last row when it was on the last row (a log), else stay put.
        self.follow = follow
        #: False where the screen has its own search box for this table (the Tool log): ``/`` is the screen's then.
        self.filterable = filterable
        self.filter_text = ""
        self._all: dict[str, tuple[list[Any], int, Any]] = {}
        self._next_key = 0
        self._filter_box: TableFilter | None = None

    # ------------------------------------------------------------------------------------------ rows

    def has_row(self, key: str) -> bool:
        """Whether the table holds the row, shown or hidden by the filter."""
        return key in self._all

    def keys(self) -> list[str]:
        """Every row's key, shown or hidden by the filter, in the order they were added."""
        return list(self._all)

    def _matches(self, cells: list[Any]) -> bool:
        needle = self.filter_text.lower()
        return not needle or any(needle in cell_text(c).lower() for c in cells)

    def add_row(self, *cells: CellType, height: int | None = 1, key: str | None = None, label: Any = None) -> RowKey:
        if key is None:
            self._next_key += 1
            key = f"row-{self._next_key}"
        if key in self._all:  # added again: the same row with new values
            for column, value in zip(self.columns, cells, strict=False):
                self.update_cell(key, column, value)
            return RowKey(key)
        cells = tuple(self._flexed(i, plain_cell(c)) for i, c in enumerate(cells))
        self._all[key] = (list(cells), height or 1, label)
        if not self._matches(list(cells)):
            return RowKey(key)
        at_end = self.row_count == 0 or self.cursor_row >= self.row_count - 1
        row_key = super().add_row(*cells, height=height, key=key, label=label)
        if self.follow and at_end:
            self.move_cursor(row=self.row_count - 1, animate=False)
        return row_key

    def update_cell(
        self, row_key: RowKey | str, column_key: ColumnKey | str, value: CellType, *, update_width: bool = True
    ) -> None:
        key = row_key.value if isinstance(row_key, RowKey) else row_key
        column = ColumnKey(str(column_key)) if isinstance(column_key, str) else column_key
        value = ellipsized(plain_cell(value)) if column.value == self.flex else plain_cell(value)
        if key is None or key not in self._all:
            super().update_cell(row_key, column_key, value, update_width=True)
            return
        cells, _height, _label = self._all[key]
        index = list(self.columns).index(column)
        while len(cells) <= index:
            cells.append("")
        if same_cell(cells[index], value):
            return
        cells[index] = value
        shown = key in self.rows
        if shown != self._matches(cells):
            self._rebuild()
        elif shown:
            super().update_cell(row_key, column_key, value, update_width=True)

    def sort(self, *columns: ColumnKey | str, key: Any = None, reverse: bool = False) -> ConsoleTable:
        """Sort the rows shown, and keep that order for the rows the filter brings back."""
        super().sort(*columns, key=key, reverse=reverse)
        order = [row.key.value for row in self.ordered_rows if row.key.value is not None]
        rest = {k: v for k, v in self._all.items() if k not in set(order)}
        self._all = {**{k: self._all[k] for k in order if k in self._all}, **rest}
        return self

    def remove_row(self, row_key: RowKey | str) -> None:
        key = row_key.value if isinstance(row_key, RowKey) else row_key
        self._all.pop(key or "", None)
        if RowKey(key) in self.rows:
            super().remove_row(row_key)

    def clear(self, columns: bool = False) -> ConsoleTable:
        self._all.clear()
        super().clear(columns)
        return self

    # ------------------------------------------------------------------------------------------ flex

    def _flexed(self, index: int, value: Any) -> Any:
        if self.flex is not None and index < len(self.columns) and list(self.columns)[index].value == self.flex:
            return ellipsized(value)
        return value

    async def _on_idle(self, event: events.Idle) -> None:
        await super()._on_idle(event)  # measures the columns' values first
        self.fit_flex()

    def on_resize(self) -> None:
        self.fit_flex()

    def fit_flex(self) -> None:
        """Give the flex column the width the other columns leave (its values' width at most)."""
        col = self.columns.get(ColumnKey(self.flex)) if self.flex is not None else None
        room = self.scrollable_content_region.width
        if room <= 0:
            return
        pad = 2 * self.cell_padding
        if self.short:
            self._fit_headings(room, col.key if col is not None else None)
        if col is None:
            return
        others = sum(c.get_render_width(self) for k, c in self.columns.items() if k != col.key)
        natural = max(col.content_width, col.label.cell_len)
        # its heading's width at least, unless that would scroll the table sideways (a row lost to the scrollbar): then
        # what is left, none at all if need be (the screen shows the whole value of the selected row elsewhere)
        width = min(natural, max(room - others - pad, 0))
        if col.auto_width or col.width != width:
            col.auto_width = False
            col.width = width
            self._require_update_dimensions = True
            self._clear_caches()
            self.refresh()
            self.check_idle()

    def _fit_headings(self, room: int, flex: ColumnKey | None) -> None:
        """The short headings while the columns with their own (the flex one at its heading's width) pass ``room``."""
        wide = 0
        for column_key, column in self.columns.items():
            own_width = self._own_labels.get(str(column_key.value), column.label).cell_len
            values = column.content_width if column.auto_width else column.width
            wide += (own_width if column_key == flex else max(own_width, values)) + 2 * self.cell_padding
        shorten = wide > room
        for key, heading in self.short.items():
            col = self.columns.get(ColumnKey(key))
            if col is None:
                continue
            own = self._own_labels.setdefault(key, col.label)
            label = Text(heading) if shorten else own
            if col.label.plain == label.plain:
                continue
            col.label = label
            cells = [Text(cell_text(self.get_cell(r, col.key))).cell_len for r in self.rows]
            col.content_width = max([label.cell_len, *cells])  # DataTable measured it with the other heading
            self._require_update_dimensions = True
            self._clear_caches()
            self.refresh()

    # ---------------------------------------------------------------------------------------- filter

    def set_filter(self, text: str) -> None:
        """Show only the rows with ``text`` in any cell (case-insensitive); empty shows every row."""
        if text == self.filter_text:
            return
        self.filter_text = text
        self._rebuild()

    def _rebuild(self) -> None:
        """Show the rows that match the filter, in the order they were added; the cursor stays on its row."""
        selected = cursor_key(self)
        rows = list(self._all.items())
        super().clear()
        for key, (cells, height, label) in rows:
            if self._matches(cells):
                DataTable.add_row(self, *cells, height=height, key=key, label=label)
        if selected is not None and RowKey(selected) in self.rows:
            self.move_cursor(row=self.get_row_index(selected), animate=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "filter" and not self.filterable:
            return False  # the key goes on to the screen's own search
        return True

    def action_filter(self) -> None:
        if self._filter_box is None:
            self._filter_box = TableFilter(self)
            self._filter_box.value = self.filter_text
            parent = self.parent
            assert isinstance(parent, Widget)
            parent.mount(self._filter_box, after=self)
        self._filter_box.focus()

    def close_filter(self) -> None:
        """Clear the filter, remove its box and give the focus back to the table."""
        self.set_filter("")
        if self._filter_box is not None:
            self._filter_box.remove()
            self._filter_box = None
        self.focus()

    def action_first_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=0, animate=False)

    def action_last_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)
