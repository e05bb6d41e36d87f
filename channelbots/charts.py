"""Charts out: a chart the agent drew this turn (`create_chart`, capabilities/charts) reaches a chat as a PNG
rendered here, or — where an image cannot be posted (the platform refuses the upload, or the renderer is
not installed) — as its numbers in a text table.

The PNG mirrors the web console's drawing (console/static/console/charts.js): points at evenly spaced positions
labelled with x_values, the same palette, grouped bars, areas filled to the baseline, pie from the one
series. matplotlib runs on its Agg backend through `Figure` objects only (no pyplot): nothing global is
touched, so the Celery thread pool may render several charts at once.
"""

from __future__ import annotations

import io
import logging
import math
import re
from typing import Any

from agents.models import ToolCall
from channelbots.platforms import PlatformClient, PlatformError

logger = logging.getLogger(__name__)

CHART_TYPES = ("line", "bar", "area", "scatter", "pie")
COLORS = ("#2f6fde", "#e0742b", "#2b9e6b", "#b5407a", "#7a5bd6", "#c9a227", "#3a9fb5", "#8c5a3c",
          "#5e7d2a", "#d14d4d", "#4d6bd1", "#7d7d7d")
MAX_CHARTS = 3
TABLE_ROWS = 60
CELL_CHARS = 24
MARKDOWN_PLATFORMS = {"slack", "mattermost"}  # Telegram messages go out without a parse mode


class RendererMissing(Exception):
    """matplotlib is not installed: the chart goes out as a table."""


def is_chart(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("kind") == "chart" and value.get("chart_type") in CHART_TYPES
            and isinstance(value.get("x_values"), list) and isinstance(value.get("series"), list))


def charts_of_run(run_id: Any) -> list[dict[str, Any]]:
    """The charts this run's tool calls produced, in the order they were drawn."""
    results = ToolCall.objects.filter(run_id=run_id, tool_name="create_chart", status=ToolCall.Status.OK).values_list(
        "result", flat=True)
    return [r for r in results if isinstance(r, dict) and is_chart(r)]


def file_name(spec: dict[str, Any], index: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", str(spec.get("title") or "").lower()).strip("-")[:60]
    return f"{slug or 'chart'}{'-' + str(index + 1) if index else ''}.png"


# ------------------------------------------------------------------ image


def render_png(spec: dict[str, Any]) -> bytes:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise RendererMissing("matplotlib is not installed") from None

    figure = Figure(figsize=(8, 4.5), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    labels = [_label(x) for x in spec["x_values"]]
    series = spec["series"]
    if spec["chart_type"] == "pie":
        _pie(axes, labels, series[0])
    else:
        _cartesian(axes, spec["chart_type"], labels, series)
        if spec.get("x_label"):
            axes.set_xlabel(str(spec["x_label"]))
        if spec.get("y_label"):
            axes.set_ylabel(str(spec["y_label"]))
        if len(series) > 1 or series[0].get("name"):
            axes.legend(loc="best", fontsize=8, frameon=False)
    if spec.get("title"):
        axes.set_title(str(spec["title"]), fontsize=12)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _cartesian(axes, chart_type: str, labels: list[str], series: list[dict[str, Any]]) -> None:
    positions = list(range(len(labels)))
    k = len(series)
    width = 0.8 / k
    for si, s in enumerate(series):
        color = COLORS[si % len(COLORS)]
        values = [float(v) for v in s["values"]]
        name = str(s.get("name") or "")
        if chart_type == "bar":
            offsets = [p - 0.4 + width * (si + 0.5) for p in positions]
            axes.bar(offsets, values, width=width * 0.95, color=color, label=name)
        elif chart_type == "scatter":
            axes.scatter(positions, values, color=color, s=18, label=name)
        else:
            axes.plot(positions, values, color=color, linewidth=2, label=name)
            if chart_type == "area":
                axes.fill_between(positions, values, 0, color=color, alpha=0.25)
    step = max(1, math.ceil(len(labels) / 20))  # at most ~20 tick labels, as the eye can read them
    axes.set_xticks(positions[::step], labels[::step], rotation=30 if step > 1 or _long(labels) else 0,
                    ha="right" if step > 1 or _long(labels) else "center", fontsize=8)
    axes.grid(axis="y", alpha=0.3)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def _pie(axes, labels: list[str], s: dict[str, Any]) -> None:
    values = [max(float(v), 0.0) for v in s["values"]]
    if sum(values) <= 0:
        axes.text(0.5, 0.5, "(nothing to show: every value is zero or negative)", ha="center", va="center")
        axes.set_axis_off()
        return
    colors = [COLORS[i % len(COLORS)] for i in range(len(values))]
    axes.pie(values, labels=labels, colors=colors, autopct="%1.0f%%", textprops={"fontsize": 8})
    axes.set_aspect("equal")


def _long(labels: list[str]) -> bool:
    return sum(len(label) for label in labels) > 80


def _label(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ------------------------------------------------------------------ text


def _number(value: Any) -> str:
    v = float(value)
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}" if abs(v) >= 10000 else str(int(v))
    return f"{v:,.4g}" if abs(v) >= 10000 else f"{round(v, 4):g}"


def _cell(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def table_text(spec: dict[str, Any], *, fenced: bool = True) -> str:
    """The chart's numbers as a monospace table (the x axis down, one column per series); fenced as a code
    block where the platform reads Markdown (Slack, Mattermost), plain where it would show the backticks."""
    series = spec["series"]
    header = [_cell(spec.get("x_label") or ""), *(_cell(s.get("name") or "") for s in series)]
    rows = [[_cell(_label(x)), *(_number(s["values"][i]) for s in series)] for i, x in enumerate(spec["x_values"])]
    shown = rows[:TABLE_ROWS]
    widths = [max(len(r[c]) for r in [header, *shown]) for c in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(widths[0]) if c == 0 else cell.rjust(widths[c])
                         for c, cell in enumerate(cells)).rstrip()

    body = [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in shown)]
    if len(rows) > len(shown):
        body.append(f"… {len(rows) - len(shown)} more rows")
    title = str(spec.get("title") or "Chart")
    kind = spec["chart_type"]
    table = "\n".join(body)
    return f"{title} ({kind} chart)\n" + (f"```\n{table}\n```" if fenced else table)


# ------------------------------------------------------------------ delivery


def deliver(client: PlatformClient, chat_id: str, reply_to: str, run_id: Any) -> list[str]:
    """Post this run's charts in the thread; what each became ("image" | "table" | "lost")."""
    charts = charts_of_run(run_id)
    outcomes: list[str] = []
    for index, spec in enumerate(charts[:MAX_CHARTS]):
        outcomes.append(_deliver_one(client, chat_id, reply_to, spec, index))
    if len(charts) > MAX_CHARTS:
        names = ", ".join(str(c.get("title") or "untitled") for c in charts[MAX_CHARTS:])
        try:
            client.post(chat_id, f"{len(charts) - MAX_CHARTS} more charts are in the web console: {names}.",
                        reply_to=reply_to)
        except PlatformError as exc:
            logger.warning("bot %s: could not name the charts left out (%s)", client.bot.pk, exc)
    return outcomes


def _deliver_one(client: PlatformClient, chat_id: str, reply_to: str, spec: dict[str, Any], index: int) -> str:
    try:
        image = render_png(spec)
        client.upload(chat_id, file_name(spec, index), image, "image/png", reply_to=reply_to)
        return "image"
    except (RendererMissing, PlatformError) as exc:
        logger.info("bot %s: chart %d as a table (%s)", client.bot.pk, index + 1, exc)
    except Exception:
        logger.exception("bot %s: chart %d could not be drawn; sending its numbers", client.bot.pk, index + 1)
    try:
        client.post(chat_id, table_text(spec, fenced=client.platform in MARKDOWN_PLATFORMS), reply_to=reply_to)
        return "table"
    except PlatformError as exc:
        logger.warning("bot %s: chart %d could not be posted at all (%s)", client.bot.pk, index + 1, exc)
        return "lost"
