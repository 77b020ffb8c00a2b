"""Budget: the latency tiers and their budgets, the tools each tier shows for a context, the global default
tier, and the leaderboard with badges (the budget layer's leaderboard, ``Engine.leaderboard``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Header, Label, Static

from console.commands import binding_key
from console.format import tier_text
from console.host import leaderboard_rows
from console.screens.base import ConsoleScreen
from console.state import Changes
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from console.widgets.tables import ConsoleTable, cell_text, cursor_key

if TYPE_CHECKING:
    from engine import Engine

TIERS = ("fast", "standard", "deep")
#: The tools-per-tier table's headings while its own would not fit (its tiers in the Tiers table's order beside it).
NARROW_TIER_TOOLS = {"fast": "F", "standard": "S", "deep": "D", "why": "Why"}


class BudgetScreen(ConsoleScreen):
    CSS_PATH = "budget.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "next_context", "Next context", id="budget_context"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.context: str | None = None
        #: The leaderboard's rows by row key, for the line that shows the highlighted one whole.
        self.board_rows: dict[str, dict[str, Any]] = {}
        self.compact = False

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="budget-top"):
            with Vertical(id="tiers-pane"):
                yield Label("Tiers", classes="section-title")
                yield Static("", id="default-tier")
                yield ConsoleTable(id="tiers", cursor_type="row")
            with Vertical(id="tier-tools-pane"):
                yield Label("Tools each tier shows", id="tier-tools-title", classes="section-title")
                # the reasons take the room the tiers' marks leave; the highlighted tool's whole reason is below.
                # Narrow (80 columns, a scrollbar), the headings give way to F S D and Why: the marks are one cell
                yield ConsoleTable(id="tier-tools", cursor_type="row", flex="why", short=NARROW_TIER_TOOLS)
                yield Static("", id="tier-tools-why", classes="muted")
        yield Label("Leaderboard", classes="section-title")
        yield Static("", id="leaderboard-note", classes="missing")
        yield ConsoleTable(id="leaderboard", cursor_type="row", zebra_stripes=True, flex="compatibility")
        yield Static("", id="leaderboard-row", classes="muted")  # the highlighted row whole (columns may be cut)
        yield KeyBar(classes="keybar")
        yield KeyFooter()

    def on_mount(self) -> None:
        tiers = self.query_one("#tiers", DataTable)
        # narrow enough for a third of 80 columns: the keys as "F5 ⇧F5" (the call's, then the default's)
        for col in ("Tier", "Budget", "Keys", "Tools"):
            tiers.add_column(col)
        tt = self.query_one("#tier-tools", DataTable)
        tt.add_column("Tool", key="tool")
        for t in TIERS:  # STANDARD as STD: every tier's column shows at 80 columns too
            tt.add_column("STD" if t == "standard" else t.upper(), key=t)
        tt.add_column("Why hidden", key="why")
        self.refresh_all()

    @on(DataTable.RowHighlighted, "#tier-tools")
    def _tool_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_why(event.row_key.value)

    @on(DataTable.RowHighlighted, "#leaderboard")
    def _board_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_board_row(event.row_key.value)

    def _show_board_row(self, key: str | None) -> None:
        row = self.board_rows.get(key or "")
        self.query_one("#leaderboard-row", Static).update(Text(board_row_text(row)) if row else "")

    def on_resize(self) -> None:
        """Across 100 columns the leaderboard changes its columns (compact below)."""
        engine = self.capp.engine
        if engine is not None and self.is_mounted and (self.size.width < COMPACT_BELOW) != self.compact:
            self._leaderboard(engine)

    def _show_why(self, name: str | None) -> None:
        """The highlighted tool's whole reason for being hidden (its cell may end in "…")."""
        tt = self.query_one("#tier-tools", ConsoleTable)
        note = Text()
        if name is not None and name in tt.rows:  # shown (the filter keeps hidden rows out of ``rows``)
            note = Text(f"{name}: {cell_text(tt.get_cell(name, 'why')) or 'shown by every tier'}")
        self.query_one("#tier-tools-why", Static).update(note)

    def apply_changes(self, changes: Changes) -> None:
        if changes.default_tier or changes.config_reloaded or changes.invocations_changed:
            self.refresh_all()

    def action_next_context(self) -> None:
        engine = self.capp.engine
        if engine is None or not engine.settings.contexts:
            return
        names = sorted(engine.settings.contexts)
        idx = names.index(self.context) + 1 if self.context in names else 0
        self.context = names[idx % len(names)]
        self.refresh_all()

    def _key(self, binding_id: str) -> str:
        for _node, binding, _enabled, _tooltip in self.active_bindings.values():
            if binding.id == binding_id:
                return binding_key(self.app, binding)
        return "-"

    def _keys(self, tier: str) -> str:
        """The tier's keys: for the selected call, then for the global default."""
        return f"{self._key(f'tier_{tier}')} {self._key(f'default_{tier}')}"

    def refresh_all(self) -> None:
        if not self.is_mounted:
            return
        engine = self.capp.engine
        default = engine.default_tier if engine is not None else self.capp.state.default_tier
        line = Text("Default tier: ")
        line.append_text(tier_text(default))
        self.query_one("#default-tier", Static).update(line)
        tiers = self.query_one("#tiers", DataTable)
        tt = self.query_one("#tier-tools", DataTable)
        tiers.clear()
        tt.clear()
        if engine is None:
            self.query_one("#leaderboard-note", Static).update(self.capp.engine_error or "engine starting…")
            return
        if self.context not in engine.settings.contexts:
            self.context = next(iter(sorted(engine.settings.contexts)), None)
        budgets = engine.settings.budget.tiers
        shown: dict[str, dict[str, str]] = {}
        why: dict[str, list[str]] = {}
        for tier in TIERS:
            names: list[str] = []
            if self.context is not None:
                view = engine.context_view(self.context, tier)
                names = [t.name for t in view.tools]
                for name in names:
                    shown.setdefault(name, {})[tier] = "✔"
                for name, reason in view.hidden:
                    shown.setdefault(name, {}).setdefault(tier, "–")
                    if reason not in why.setdefault(name, []):
                        why[name].append(reason)
            tiers.add_row(tier_text(tier), f"{getattr(budgets, tier)} ms", self._keys(tier), str(len(names)))
        tiers.add_row(tier_text("auto"), "selector", self._keys("auto"), "-")
        self.query_one("#tier-tools-title", Label).update(
            f"Tools each tier shows — context {self.context or '(none)'}  (c: next context)"
        )
        # the marks are one character, so every tier's column shows even at 80 columns; the reasons come last
        for name in sorted(shown):
            marks = [_mark(shown[name].get(t, "")) for t in TIERS]
            tt.add_row(name, *marks, Text("; ".join(why.get(name, [])), style="dim"), key=name)
        self._show_why(cursor_key(tt))
        self._leaderboard(engine)

    def _leaderboard(self, engine: Engine) -> None:
        note = self.query_one("#leaderboard-note", Static)
        board = self.query_one("#leaderboard", ConsoleTable)
        board.clear(columns=True)
        rows = leaderboard_rows(engine)
        note.display = not rows
        note.update("" if rows else "no tools registered yet")
        # below 100 columns the leaderboard has fewer columns; the line under it shows the highlighted row whole
        self.compact = self.size.width < COMPACT_BELOW
        shown = COMPACT_KEYS if self.compact else LEADER_KEYS
        board.flex = "name" if self.compact else "compatibility"
        for col, label in LEADER_COLUMNS:
            if col in shown:
                board.add_column(label, key=col)
        self.board_rows = {str(i): row for i, row in enumerate(rows)}
        for row_key, row in self.board_rows.items():
            cells: list[str | Text] = [_cell(row.get(c)) for c, _ in LEADER_COLUMNS]
            for key in ("p50_ms", "p99_ms"):  # before budget.min_samples runs: what was seen, marked "~"
                seen = row.get(f"observed_{key}")
                if row.get(key) is None and seen is not None:
                    cells[LEADER_KEYS.index(key)] = Text(f"~{seen:.0f}", style="dim")
            badge = str(row.get("badge") or "")
            cells[LEADER_KEYS.index("badge")] = Text(badge, style=BADGE_STYLE.get(badge, ""))
            fits = LEADER_KEYS.index("compatibility")  # the column says "Fits": "STANDARD", not "STANDARD compatible"
            cells[fits] = str(cells[fits]).removesuffix(" compatible")
            board.add_row(*[c for c, k in zip(cells, LEADER_KEYS, strict=True) if k in shown], key=row_key)
        self._show_board_row(cursor_key(board))


LEADER_COLUMNS = (
    ("category", "Category"),
    ("rank", "#"),
    ("name", "Tool"),
    ("server", "Server"),
    ("tier", "Tier"),
    ("p50_ms", "p50 ms"),
    ("p99_ms", "p99 ms"),
    ("samples", "Samples"),
    ("badge", "Badge"),
    ("health", "Health"),
    ("compatibility", "Fits"),
)
LEADER_KEYS = [c for c, _ in LEADER_COLUMNS]
#: Below this many columns the leaderboard shows only these (the tool's name the flex column): 80 columns fit.
COMPACT_BELOW = 100
COMPACT_KEYS = ("category", "rank", "name", "tier", "p50_ms", "p99_ms", "badge")
BADGE_STYLE = {"Lightning": "bold cyan", "Fast": "green", "Standard": "yellow", "Slow": "red", "Unmeasured": "grey50"}


def board_row_text(row: dict[str, Any]) -> str:
    """A leaderboard row whole, in words: "send_email_summary (builtin) · business #2 · tier standard · …"."""

    def ms(key: str) -> str:
        seen = row.get(f"observed_{key}")
        if row.get(key) is not None:
            return f"{_cell(row.get(key))} ms"
        return f"~{seen:.0f} ms (too few samples)" if seen is not None else "-"

    fits = str(row.get("compatibility") or "-").removesuffix(" compatible")
    return (
        f"{_cell(row.get('name'))} ({_cell(row.get('server'))}) · {_cell(row.get('category'))} "
        f"#{_cell(row.get('rank'))} · tier {_cell(row.get('tier'))} · p50 {ms('p50_ms')} · p99 {ms('p99_ms')} · "
        f"{_cell(row.get('samples')) or 0} samples · {_cell(row.get('badge')) or '-'} · "
        f"health {_cell(row.get('health')) or '-'} · fits {fits}"
    )


def _mark(value: str) -> Text:
    """✔ (the tier shows the tool) in green, – (hidden) dimmed."""
    return Text(value, style="green" if value == "✔" else "dim")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.0f}"
    if isinstance(value, list | tuple | set):
        return " ".join(str(v) for v in value)
    return "" if value is None else str(value)
