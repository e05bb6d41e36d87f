"""Charts. `create_chart` turns numbers the model already has into a chart spec the web UI draws natively.

Numbers arrive as columns — one `x_values` list for the axis and one `values` list per series — because
a free-form `data` argument is not something a JSON Schema can describe. An empty axis, no series or a
series whose length differs from the axis is a retry naming what is wrong: a frame drawn around no data
reads as "no trend", not as an error, and it would be persisted and redrawn on every replay.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext

from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, NoConfig, ToolDecl, function_toolset

ChartType = Literal["line", "bar", "area", "scatter", "pie"]
MAX_POINTS = 500
MAX_SERIES = 12
CHART_SPEC_VERSION = 1


class Series(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Legend label of this series, e.g. 'Revenue'.", max_length=80)
    values: list[float] = Field(description="One number per entry of x_values, in the same order.")


def _problems(chart_type: str, x_values: list[Any], series: list[Series]) -> list[str]:
    problems = []
    if not x_values:
        problems.append("x_values is empty: give one label or number per point on the axis")
    elif len(x_values) > MAX_POINTS:
        problems.append(f"x_values has {len(x_values)} points; the cap is {MAX_POINTS}: aggregate first")
    if not series:
        problems.append("series is empty: give at least one series with one value per x value")
    elif len(series) > MAX_SERIES:
        problems.append(f"there are {len(series)} series; the cap is {MAX_SERIES}")
    if chart_type == "pie" and len(series) > 1:
        problems.append("a pie chart takes exactly one series")
    for s in series:
        if x_values and len(s.values) != len(x_values):
            kind = "fewer" if len(s.values) < len(x_values) else "more"
            problems.append(
                f"series {s.name!r} has {len(s.values)} values but x_values has {len(x_values)} points "
                f"({kind} numbers than points): give exactly one value per point"
            )
        if any(not math.isfinite(v) for v in s.values):
            problems.append(f"series {s.name!r} contains a value that is not a finite number")
    names = [s.name for s in series]
    if len(names) != len(set(names)):
        problems.append("two series share a name: give each series its own name")
    return problems


async def create_chart(
    ctx: RunContext[Any],
    chart_type: ChartType,
    title: str,
    x_values: list[str | float],
    series: list[Series],
    x_label: str = "",
    y_label: str = "",
) -> dict[str, Any] | str:
    """Draw a chart from numbers you already have, so the person can see them.

    Use it for numbers already in the conversation or returned by another tool. It does not fetch,
    compute or aggregate anything: compute first (for example with run_python) and chart the result.
    Not for pictures or diagrams.

    Args:
        chart_type: line, bar, area, scatter or pie (pie takes exactly one series).
        title: Short title shown above the chart (at most 200 characters).
        x_values: The axis: one label or number per point, in order. 1 to 500 points.
        series: 1 to 12 series, each with a name and exactly one value per entry of x_values.
        x_label: Optional axis label for x_values. Default: none.
        y_label: Optional axis label for the values. Default: none.

    Returns:
        The chart spec the conversation renders (kind, chart_type, title, labels, x_values, series).
        An empty axis, no series, or a series with a different number of values than x_values comes
        back as a request to call again, naming what is missing.
    """
    problems = _problems(chart_type, x_values, series)
    if problems:
        return failures.retry(ctx, "The chart cannot be drawn: " + "; ".join(problems) + ".")
    return {
        "kind": "chart",
        "version": CHART_SPEC_VERSION,
        "chart_type": chart_type,
        "title": title.strip()[:200],
        "x_label": x_label[:80],
        "y_label": y_label[:80],
        "x_values": list(x_values),
        "series": [{"name": s.name, "values": list(s.values)} for s in series],
    }


def build(ctx: BuildContext) -> list[Built]:
    return [function_toolset([create_chart])]


CAPABILITY = Capability(
    id="charts",
    name="Charts",
    category="analysis",
    description="Draws line, bar, area, scatter and pie charts from numbers it already has.",
    offers="charts drawn in the conversation from numbers the agent has",
    examples=(
        "Chart monthly revenue for this year",
        "Compare the three plans in a bar chart",
        "Show the tickets by priority as a pie chart.",
    ),
    never_does=(
        "It never fetches, computes or aggregates numbers: it draws only the numbers it is given (at most "
        "500 points and 12 series), so pair it with Calculations or a data source."
    ),
    tools=(ToolDecl.from_function(create_chart),),
    config_model=NoConfig,
    voice="live",
    recommended=True,
    build=build,
)
