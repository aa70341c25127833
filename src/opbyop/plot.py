"""Pictures of attention: heatmaps as SVG, with alt text, for pages and notebooks.

Needs matplotlib, the ``plot`` extra (``pip install "opbyop[plot]"``);
``import opbyop`` does not import this module, so the library itself needs only
NumPy.

Every picture is drawn on a white background with dark text, so it reads the
same in the site's light and dark themes, and carries a description for
screen readers: `svg` puts it in the SVG's ``<title>``, and `Picture` shows it
as the ``alt`` text of an ``<img>`` in a notebook.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

try:
    import matplotlib as mpl
    from matplotlib.colors import ListedColormap, to_rgba
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, FancyBboxPatch, Patch
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError('opbyop.plot needs matplotlib: pip install "opbyop[plot]"') from error

__all__ = [
    "Picture",
    "attention_heads",
    "attention_heatmap",
    "bar_chart",
    "block_diagram",
    "line_chart",
    "mask_grid",
    "picture",
    "similarity_heatmap",
    "spread_chart",
    "svg",
]

# Readable for colour-blind readers, dark (low values) to light (high values).
COLOURMAP = "viridis"
# A mask's two colours: the two ends of COLOURMAP, light where a query may look.
KEPT_COLOUR, HIDDEN_COLOUR = "#fde725", "#440154"
# Light fills for a diagram's boxes, one per kind of step: black text reads on each.
BOX_COLOURS = ("#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb", "#f0f0f0")
# Lines of a chart: the Okabe-Ito colours, told apart by colour-blind readers,
# and a dash pattern each, told apart in black and white.
LINE_COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7")
LINE_STYLES = ("-", "--", ":", "-.")
# Style keys fixed for every picture, so an SVG is the same on every machine
# and every run: text stays text (small, searchable), no date, fixed ids.
_STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "opbyop",
    "font.family": ["DejaVu Sans", "sans-serif"],
    "font.size": 10,
    "text.color": "black",
    "axes.labelcolor": "black",
    "xtick.color": "black",
    "ytick.color": "black",
}


def _text_colour(rgba: Sequence[float]) -> str:
    """Black or white, whichever contrasts more with a cell of this colour."""
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3])
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    # 0.179: the luminance at which black and white text contrast equally (WCAG)
    return "black" if luminance > 0.179 else "white"


def attention_heatmap(
    weights: ArrayLike,
    rows: Sequence[str],
    columns: Sequence[str] | None = None,
    *,
    title: str = "",
    value_range: tuple[float, float] | None = (0.0, 1.0),
    value_label: str = "attention weight",
    row_axis: str = "query (the word looking)",
    column_axis: str = "key (the word looked at)",
    decimals: int = 2,
) -> Figure:  # [n_rows, n_columns] -> a figure
    """Draw a matrix as a grid of coloured cells, each with its value written in.

    Parameters
    ----------
    weights : array_like
        A 2-D matrix: attention weights, scores, anything with one row per
        query and one column per key.
    rows, columns : sequence of str
        The labels down the side (one per row) and across the bottom (one per
        column). `columns` defaults to `rows`, as in self-attention.
    title : str
        The title above the grid.
    value_range : (float, float) or None
        The values the colours span. ``(0, 1)``, the default, is every value a
        weight can take; ``None`` spans the matrix's own smallest to largest.
    value_label : str
        What the colour bar measures.
    row_axis, column_axis : str
        The axis labels.
    decimals : int
        How many decimals each cell shows.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, not attached to pyplot: pass it to `svg` or `picture`.

    Raises
    ------
    ValueError
        If `weights` is not 2-D, or the labels do not match its shape.

    Examples
    --------
    >>> from opbyop.plot import attention_heatmap, svg
    >>> figure = attention_heatmap([[0.9, 0.1], [0.3, 0.7]], ["a", "b"])
    >>> text = svg(figure, "Two words; each looks mostly at itself.")
    >>> text.startswith("<svg") and "<title>Two words" in text
    True
    """
    values = np.asarray(weights, dtype=np.float64)
    columns = list(rows if columns is None else columns)
    if values.ndim != 2:
        raise ValueError(f"attention_heatmap: weights must be 2-D, got shape {values.shape}")
    if values.shape != (len(rows), len(columns)):
        raise ValueError(
            f"attention_heatmap: weights has shape {values.shape}, but there "
            f"are {len(rows)} row labels and {len(columns)} column labels"
        )
    low, high = (
        value_range if value_range is not None else (float(values.min()), float(values.max()))
    )
    with mpl.rc_context(_STYLE):
        size = max(len(rows), len(columns))
        side = min(7.0, 2.5 + 0.55 * size)
        figure = Figure(figsize=(side + 1.3, side), facecolor="white")
        axes = figure.add_subplot()
        image = axes.imshow(values, cmap=COLOURMAP, vmin=low, vmax=high)
        axes.set_xticks(range(len(columns)), columns, rotation=45, ha="right")
        axes.set_yticks(range(len(rows)), rows)
        axes.set_xlabel(column_axis)
        axes.set_ylabel(row_axis)
        if title:
            axes.set_title(title)
        span = (high - low) or 1.0
        for i, row in enumerate(values):
            for j, value in enumerate(row):
                cell = image.cmap((value - low) / span)
                axes.text(
                    j,
                    i,
                    f"{value:.{decimals}f}",
                    ha="center",
                    va="center",
                    fontsize=11 if size <= 6 else 9,
                    color=_text_colour(cell),
                )
        figure.colorbar(image, ax=axes, label=value_label)
        figure.set_layout_engine("tight")
    return figure


def attention_heads(
    weights: ArrayLike,
    tokens: Sequence[str],
    *,
    titles: Sequence[str] | None = None,
    columns: int = 4,
    title: str = "",
    value_range: tuple[float, float] = (0.0, 1.0),
    value_label: str = "attention weight",
    row_axis: str = "query (the token looking)",
    column_axis: str = "key (the token looked at)",
) -> Figure:  # [n_heads, n, n] -> a figure
    """Draw several heads' weights as small grids side by side, one per head.

    The grids are too small to write each value in: the colour is the value,
    on one scale shared by every grid, so heads compare at a glance. Tokens
    label the rows of the left-hand grids and the columns of the bottom ones.

    Parameters
    ----------
    weights : array_like, shape (n_heads, n, n)
        One matrix per head: a row per query token, a column per key token.
    tokens : sequence of str
        The ``n`` tokens, labelling both the rows and the columns.
    titles : sequence of str, optional
        One title per grid; ``"head 0"``, ``"head 1"``... by default.
    columns : int
        How many grids side by side in each row of the picture.
    title : str
        The title above all the grids.
    value_range : (float, float)
        The values the colours span; ``(0, 1)``, every value a weight can take.
    value_label : str
        What the colour bar measures.
    row_axis, column_axis : str
        The labels of the rows and the columns, once for all the grids.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, not attached to pyplot: pass it to `svg` or `picture`.

    Raises
    ------
    ValueError
        If `weights` is not 3-D with square matrices, or the labels do not
        match its shape.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop.plot import attention_heads
    >>> weights = np.stack([np.eye(3), np.full((3, 3), 1 / 3)])  # 2 heads
    >>> figure = attention_heads(weights, ["a", "b", "c"], columns=2)
    >>> [axes.get_title() for axes in figure.axes[:2]]
    ['head 0', 'head 1']
    """
    values = np.asarray(weights, dtype=np.float64)
    if values.ndim != 3 or values.shape[1] != values.shape[2]:
        raise ValueError(
            f"attention_heads: weights must have shape (n_heads, n, n), got {values.shape}"
        )
    n_heads, n, _ = values.shape
    names = [f"head {h}" for h in range(n_heads)] if titles is None else list(titles)
    if len(tokens) != n or len(names) != n_heads:
        raise ValueError(
            f"attention_heads: weights has shape {values.shape}, but there are "
            f"{len(tokens)} tokens and {len(names)} titles"
        )
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"attention_heads: columns must be a positive integer, got {columns!r}")
    columns = min(columns, n_heads)
    rows = -(-n_heads // columns)  # rounded up
    low, high = value_range
    with mpl.rc_context(_STYLE):
        side = 1.2 + 0.16 * n  # each grid, with room for its labels
        figure = Figure(
            figsize=(columns * side + 1.0, rows * side + 0.4),
            facecolor="white",
            layout="constrained",  # room for the labels and one shared colour bar
        )
        grid = figure.subplots(rows, columns, squeeze=False)
        for h, axes in enumerate(grid.flat):
            if h >= n_heads:
                axes.set_axis_off()  # an empty slot in the last row
                continue
            image = axes.imshow(values[h], cmap=COLOURMAP, vmin=low, vmax=high)
            axes.set_title(names[h], fontsize=10)
            row, column = divmod(h, columns)
            last_row = row == rows - 1 or h + columns >= n_heads
            axes.set_yticks(range(n), tokens if column == 0 else [""] * n, fontsize=7)
            axes.set_xticks(range(n), tokens if last_row else [""] * n, rotation=90, fontsize=7)
            axes.tick_params(length=0)
        if title:
            figure.suptitle(title)
        figure.supylabel(row_axis)
        figure.supxlabel(column_axis)
        figure.colorbar(image, ax=grid.ravel().tolist(), label=value_label, shrink=0.6)
    return figure


def similarity_heatmap(
    values: ArrayLike,
    *,
    title: str = "",
    value_range: tuple[float, float] | None = (-1.0, 1.0),
    value_label: str = "cosine similarity",
    axis_label: str = "position",
    tick_step: int = 16,
) -> Figure:  # [n, n] -> a figure
    """Draw a large square matrix as coloured cells, with no value written in.

    For a matrix too large to write every value in, such as the cosine
    similarity of 128 position vectors with each other: row ``i`` and column
    ``i`` are the same item, numbered from 0, with a tick every `tick_step`.

    Parameters
    ----------
    values : array_like
        A 2-D square matrix.
    title : str
        The title above the grid.
    value_range : (float, float) or None
        The values the colours span: ``(-1, 1)``, the default, is every value
        a cosine similarity can take; ``None`` spans the matrix's own smallest
        to largest.
    value_label : str
        What the colour bar measures.
    axis_label : str
        What the rows and the columns count.
    tick_step : int
        A numbered tick every `tick_step` rows and columns, from 0.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, not attached to pyplot: pass it to `svg` or `picture`.

    Raises
    ------
    ValueError
        If `values` is not a square 2-D matrix, or `tick_step` is not a
        positive integer.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop.plot import similarity_heatmap, svg
    >>> figure = similarity_heatmap(np.eye(40), tick_step=10)
    >>> [t.get_text() for t in figure.axes[0].get_xticklabels()]
    ['0', '10', '20', '30']
    >>> svg(figure, "The identity: 1 on the diagonal.").startswith("<svg")
    True
    """
    matrix = np.asarray(values, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(
            f"similarity_heatmap: values must be a square 2-D matrix, got shape {matrix.shape}"
        )
    if isinstance(tick_step, bool) or not isinstance(tick_step, int) or tick_step < 1:
        raise ValueError(
            f"similarity_heatmap: tick_step must be a positive integer, got {tick_step!r}"
        )
    low, high = (
        value_range if value_range is not None else (float(matrix.min()), float(matrix.max()))
    )
    ticks = range(0, len(matrix), tick_step)
    with mpl.rc_context(_STYLE):
        figure = Figure(figsize=(7.3, 6.0), facecolor="white")
        axes = figure.add_subplot()
        image = axes.imshow(matrix, cmap=COLOURMAP, vmin=low, vmax=high, interpolation="nearest")
        axes.set_xticks(ticks, [str(t) for t in ticks])
        axes.set_yticks(ticks, [str(t) for t in ticks])
        axes.set_xlabel(axis_label)
        axes.set_ylabel(axis_label)
        if title:
            axes.set_title(title)
        figure.colorbar(image, ax=axes, label=value_label)
        figure.set_layout_engine("tight")
    return figure


def bar_chart(
    values: Mapping[str, float],
    *,
    title: str = "",
    value_label: str = "",
    decimals: int = 2,
) -> Figure:  # {name: value} -> a figure
    """Draw one horizontal bar per value, top to bottom, each value written in.

    Parameters
    ----------
    values : mapping of str to float
        Each bar's label and its length, in the order drawn from the top;
        each finite and at least 0.
    title, value_label : str
        The title, and the label of the axis the values run along.
    decimals : int, default 2
        How many decimals the value written beside each bar shows.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, not attached to pyplot: pass it to `svg` or `picture`.

    Raises
    ------
    ValueError
        If there are no values, or a value is negative or not finite.

    Examples
    --------
    >>> from opbyop.plot import bar_chart, svg
    >>> figure = bar_chart({"guess": 8.0, "count": 3.4}, value_label="bits")
    >>> svg(figure, "Two bars: 8.0 and 3.4.").startswith("<svg")
    True
    """
    if not values:
        raise ValueError("bar_chart: values needs at least one bar, got none")
    lengths = np.array([float(v) for v in values.values()], dtype=np.float64)
    if not (np.isfinite(lengths) & (lengths >= 0)).all():
        raise ValueError(f"bar_chart: every value must be finite and >= 0, got {lengths.tolist()}")
    names = list(values)
    rows = np.arange(len(names))
    with mpl.rc_context(_STYLE):
        height = 1.0 + 0.55 * len(names)
        figure = Figure(figsize=(6.0, height), facecolor="white", layout="constrained")
        axes = figure.add_subplot()
        axes.barh(rows, lengths, color=LINE_COLOURS[0], height=0.6)
        for row, length in enumerate(lengths.tolist()):
            axes.text(length, row, f" {length:.{decimals}f}", va="center", ha="left")
        axes.set_yticks(rows, names)
        axes.invert_yaxis()  # the first value on top
        axes.set_xlim(0.0, lengths.max() * 1.15 or 1.0)
        axes.grid(True, axis="x", color="0.9")
        axes.set_axisbelow(True)
        axes.set_xlabel(value_label)
        if title:
            axes.set_title(title)
    return figure


_SVG_START = re.compile(r"<svg\b[^>]*>")


def mask_grid(
    mask: ArrayLike,
    rows: Sequence[str],
    columns: Sequence[str] | None = None,
    *,
    cells: Sequence[Sequence[str]] | None = None,
    title: str = "",
    kept: str = "may look",
    hidden: str = "hidden",
    row_axis: str = "query (the word looking)",
    column_axis: str = "key (the word looked at)",
) -> Figure:  # [n_rows, n_columns] -> a figure
    """Draw a True/False mask as a grid: light cells where True, dark where False.

    A mask has two values, so a legend names them instead of a colour bar,
    and each cell may carry a word (a token, say) instead of a number.

    Parameters
    ----------
    mask : array_like of bool
        A 2-D mask, such as the one `opbyop.attention` takes: True where a
        query may look at a key, or a token is real.
    rows, columns : sequence of str
        The labels down the side and across the bottom. `columns` defaults
        to `rows`, as in self-attention.
    cells : sequence of sequence of str, optional
        Text to write in each cell, same shape as `mask`. Default: none.
    title : str
        The title above the grid.
    kept, hidden : str
        The legend's names for True and False.
    row_axis, column_axis : str
        The axis labels.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, not attached to pyplot: pass it to `svg` or `picture`.

    Raises
    ------
    ValueError
        If `mask` is not 2-D and boolean, or the labels or `cells` do not
        match its shape.

    Examples
    --------
    >>> from opbyop.plot import mask_grid, svg
    >>> figure = mask_grid([[True, False], [True, True]], ["a", "b"])
    >>> svg(figure, "Word a sees itself; b sees both.").startswith("<svg")
    True
    """
    values = np.asarray(mask)
    columns = list(rows if columns is None else columns)
    if values.ndim != 2 or values.dtype != np.bool_:
        raise ValueError(
            f"mask_grid: mask must be 2-D True/False, got shape {values.shape}, "
            f"dtype {values.dtype}"
        )
    if values.shape != (len(rows), len(columns)):
        raise ValueError(
            f"mask_grid: mask has shape {values.shape}, but there are "
            f"{len(rows)} row labels and {len(columns)} column labels"
        )
    if cells is not None and [len(row) for row in cells] != [len(columns)] * len(rows):
        raise ValueError(
            f"mask_grid: cells must have the shape of mask {values.shape}, "
            f"got rows of lengths {[len(row) for row in cells]}"
        )
    colours = ListedColormap([HIDDEN_COLOUR, KEPT_COLOUR])
    with mpl.rc_context(_STYLE):
        longest_row = max((len(label) for label in rows), default=0)
        width = 1.5 + 0.09 * longest_row + 0.62 * len(columns)
        height = 1.9 + 0.5 * len(rows)
        figure = Figure(figsize=(width, height), facecolor="white", layout="constrained")
        axes = figure.add_subplot()
        axes.imshow(values.astype(float), cmap=colours, vmin=0.0, vmax=1.0)
        axes.set_xticks(range(len(columns)), columns, rotation=45, ha="right")
        axes.set_yticks(range(len(rows)), rows)
        axes.set_xlabel(column_axis)
        axes.set_ylabel(row_axis)
        if title:
            axes.set_title(title)
        for i, row in enumerate(values):
            for j, value in enumerate(row):
                if cells is not None and cells[i][j]:
                    colour = KEPT_COLOUR if value else HIDDEN_COLOUR
                    axes.text(
                        j,
                        i,
                        cells[i][j],
                        ha="center",
                        va="center",
                        fontsize=8,
                        color=_text_colour(to_rgba(colour)),
                    )
        legend = [
            Patch(facecolor=KEPT_COLOUR, edgecolor="black", label=kept),
            Patch(facecolor=HIDDEN_COLOUR, edgecolor="black", label=hidden),
        ]
        figure.legend(handles=legend, loc="outside right upper", frameon=False)
    return figure


def block_diagram(
    columns: Mapping[str, Sequence[Sequence[str]]],
    *,
    title: str = "",
    input_label: str = "input",
    output_label: str = "output",
    add: str = "+",
) -> Figure:
    """Draw blocks as flow charts, one column each, with their shortcuts.

    A block is a list of halves, read from the input down to the output. A
    half is a list of steps: one of them is `add`, an addition drawn as a
    circle, and the half's shortcut (its residual connection) runs from the
    half's input around its other steps into that circle. Every other step is
    a box; boxes with the same label share a colour in every column.

    Parameters
    ----------
    columns : mapping of str to sequence of sequence of str
        Each block's title and its halves, for example
        ``{"post-norm": [["attention", "+", "layer norm"], ...]}``.
    title : str
        The title above the columns.
    input_label, output_label : str
        The text above the first step and below the last one.
    add : str
        The step that is the addition, once in each half.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, not attached to pyplot: pass it to `svg` or `picture`.

    Raises
    ------
    ValueError
        If there is no block, a block has no half, or a half does not hold
        exactly one `add`.

    Examples
    --------
    >>> from opbyop.plot import block_diagram, svg
    >>> figure = block_diagram({"a block": [["attention", "+"]]})
    >>> svg(figure, "Attention, then the addition.").startswith("<svg")
    True
    """
    if not columns:
        raise ValueError("block_diagram: columns needs at least one block, got none")
    for name, halves in columns.items():
        if not halves:
            raise ValueError(f"block_diagram: block {name!r} has no half")
        for i, half in enumerate(halves):
            if list(half).count(add) != 1:
                raise ValueError(
                    f"block_diagram: half {i} of block {name!r} must hold {add!r} once, "
                    f"got {list(half)}"
                )
    kinds = [s for halves in columns.values() for half in halves for s in half if s != add]
    colour = {
        kind: BOX_COLOURS[i % len(BOX_COLOURS)] for i, kind in enumerate(dict.fromkeys(kinds))
    }
    tallest = max(sum(len(half) for half in halves) for halves in columns.values())
    # One unit of the axes is one step down, drawn to the same scale both ways.
    # In steps: a column each, and room on the right for the last "shortcut" label.
    width, top, bottom = _COLUMN * len(columns) + 0.5, 1.5, -tallest - 1.5
    with mpl.rc_context(_STYLE):
        inches, title_height = 0.62, (0.45 if title else 0.0)  # per step; for the title
        drawing_height = inches * (top - bottom)
        figure = Figure(figsize=(inches * width, drawing_height + title_height), facecolor="white")
        # The axes fill the figure below the title, at the scale of the data:
        # one step is `inches` both ways, so nothing is stretched or left blank.
        axes = figure.add_axes((0.0, 0.0, 1.0, drawing_height / (drawing_height + title_height)))
        axes.set_axis_off()
        axes.set_xlim(-_COLUMN / 2, width - _COLUMN / 2)  # column c centred on _COLUMN * c
        axes.set_ylim(bottom, top)
        for c, (name, halves) in enumerate(columns.items()):
            _draw_block(axes, _COLUMN * c, name, halves, colour, input_label, output_label, add)
        if title:
            figure.suptitle(title, fontsize=12, y=1 - 0.1 / (drawing_height + title_height))
    return figure


# block_diagram's sizes, in steps: a column's width, a box's, a box's height,
# the circle of an addition, how far right of the centre a shortcut runs.
_COLUMN, _BOX_WIDTH, _BOX_HEIGHT, _RADIUS, _DETOUR = 5.0, 2.8, 0.56, 0.22, 2.0


def _arrow(axes: Any, start: tuple[float, float], end: tuple[float, float]) -> None:
    axes.annotate(
        "", xy=end, xytext=start, arrowprops={"arrowstyle": "-|>", "color": "black", "lw": 1.2}
    )


def _draw_block(
    axes: Any,
    x: float,
    name: str,
    halves: Sequence[Sequence[str]],
    colour: Mapping[str, str],
    input_label: str,
    output_label: str,
    add: str,
) -> None:
    """One column of `block_diagram`: steps at y = -1, -2, ..., centred on x."""
    axes.text(x, 1.0, name, ha="center", va="center", fontsize=11, fontweight="bold")
    axes.text(x, 0.0, input_label, ha="center", va="center")
    bottom, y = -0.2, 0.0  # where the item above ends; the current step's centre
    for half in halves:
        branch: float | None = None
        for step in half:
            y -= 1
            top = y + (_RADIUS if step == add else _BOX_HEIGHT / 2)
            if branch is None:  # the shortcut leaves from this half's input
                branch = (bottom + top) / 2
                axes.plot([x], [branch], "o", color="black", markersize=4)
            _arrow(axes, (x, bottom), (x, top))
            if step == add:
                axes.add_patch(Circle((x, y), _RADIUS, facecolor="white", edgecolor="black"))
                axes.text(x, y, "+", ha="center", va="center", fontsize=13)
                right = x + _DETOUR
                axes.plot([x, right, right], [branch, branch, y], color="black", lw=1.2)
                _arrow(axes, (right, y), (x + _RADIUS, y))
                axes.text(
                    right + 0.12, (branch + y) / 2, "shortcut",
                    rotation=90, ha="left", va="center", fontsize=8,
                )  # fmt: skip
                bottom = y - _RADIUS
            else:
                box = FancyBboxPatch(
                    (x - _BOX_WIDTH / 2, y - _BOX_HEIGHT / 2),
                    _BOX_WIDTH,
                    _BOX_HEIGHT,
                    boxstyle="round,pad=0,rounding_size=0.12",
                    facecolor=colour[step],
                    edgecolor="black",
                )
                axes.add_patch(box)
                axes.text(x, y, step, ha="center", va="center")
                bottom = y - _BOX_HEIGHT / 2
    _arrow(axes, (x, bottom), (x, y - 0.8))
    axes.text(x, y - 1.0, output_label, ha="center", va="center")


def line_chart(
    x: ArrayLike,
    lines: Mapping[str, ArrayLike],
    *,
    title: str = "",
    x_label: str = "x",
    y_label: str = "",
    log_scale: bool = False,
) -> Figure:  # [n], {name: [n]} -> a figure
    """Draw a few curves over the same x, each with its own colour and dashes.

    Parameters
    ----------
    x : array_like, shape (n,)
        The points along the horizontal axis.
    lines : mapping of str to array_like, shape (n,)
        Each curve's name (shown in the legend) and its values at `x`; up to
        four curves.
    title, x_label, y_label : str
        The title and the axis labels.
    log_scale : bool, optional
        Both axes in powers of ten (every value must then be positive), for
        numbers that span many orders of magnitude. Default: plain axes.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, not attached to pyplot: pass it to `svg` or `picture`.

    Raises
    ------
    ValueError
        If `x` is not 1-D, there are no curves or more than four, a curve
        does not have one value per point of `x`, or, with `log_scale`, a
        value is not positive.

    Examples
    --------
    >>> from opbyop.plot import line_chart, svg
    >>> figure = line_chart([0, 1, 2], {"double": [0, 2, 4]}, y_label="y")
    >>> svg(figure, "A straight line through 0.").startswith("<svg")
    True
    >>> errors = line_chart(
    ...     [1e-1, 1e-2, 1e-3], {"error": [1e-2, 1e-4, 1e-6]}, log_scale=True
    ... )
    >>> errors.axes[0].get_xscale(), errors.axes[0].get_yscale()
    ('log', 'log')
    """
    points = np.asarray(x, dtype=np.float64)
    if points.ndim != 1:
        raise ValueError(f"line_chart: x must be 1-D, got shape {points.shape}")
    if not 1 <= len(lines) <= len(LINE_STYLES):
        raise ValueError(
            f"line_chart: lines needs 1 to {len(LINE_STYLES)} curves, got {len(lines)}"
        )
    curves = {name: np.asarray(values, dtype=np.float64) for name, values in lines.items()}
    for name, values in curves.items():
        if values.shape != points.shape:
            raise ValueError(
                f"line_chart: curve {name!r} has shape {values.shape}, "
                f"x has shape {points.shape}: one value per point"
            )
    if log_scale:
        for name, values in [("x", points), *curves.items()]:
            if not (values > 0).all():
                raise ValueError(
                    f"line_chart: with log_scale, {name!r} must be positive, got {values.min()}"
                )
    with mpl.rc_context(_STYLE):
        figure = Figure(figsize=(6.0, 4.0), facecolor="white", layout="constrained")
        axes = figure.add_subplot()
        if log_scale:  # powers of ten: there is no 0 to mark
            axes.set_xscale("log")
            axes.set_yscale("log")
        else:
            axes.axhline(0.0, color="0.75", lw=0.8)
            axes.axvline(0.0, color="0.75", lw=0.8)
        for (name, values), colour, style in zip(
            curves.items(), LINE_COLOURS, LINE_STYLES, strict=False
        ):  # at most as many curves as styles, checked above
            axes.plot(points, values, label=name, color=colour, linestyle=style, lw=2.0)
        axes.grid(True, color="0.9")
        axes.set_xlabel(x_label)
        axes.set_ylabel(y_label)
        if title:
            axes.set_title(title)
        axes.legend(frameon=False)
    return figure


def spread_chart(
    values: Mapping[str, Sequence[float]],
    *,
    title: str = "",
    value_label: str = "",
    decimals: int = 3,
) -> Figure:  # {name: [runs]} -> a figure
    """Draw one row per name, top to bottom: a dot per run, a line between them.

    For a measurement repeated a few times (seeds): each run is a dot, the
    line from the lowest to the highest is their spread, and their mean is
    written beside it. The axis spans the values, not 0: where the spread is
    small next to the values, a difference of a few percent still shows.

    Parameters
    ----------
    values : mapping of str to sequence of float
        Each row's label and its runs' values, in the order drawn from the
        top; at least one finite value each.
    title, value_label : str
        The title, and the label of the axis the values run along.
    decimals : int, default 3
        How many decimals the mean written beside each row shows.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, not attached to pyplot: pass it to `svg` or `picture`.

    Raises
    ------
    ValueError
        If there are no rows, a row has no value, or a value is not finite.

    Examples
    --------
    >>> from opbyop.plot import spread_chart, svg
    >>> runs = {"a": [2.0, 2.1], "b": [1.9, 1.95]}
    >>> figure = spread_chart(runs, value_label="bits")
    >>> svg(figure, "Two rows of two runs.").startswith("<svg")
    True
    """
    if not values:
        raise ValueError("spread_chart: values needs at least one row, got none")
    rows = {name: np.asarray(list(runs), dtype=np.float64) for name, runs in values.items()}
    for name, runs in rows.items():
        if runs.ndim != 1 or runs.size == 0 or not np.isfinite(runs).all():
            raise ValueError(
                f"spread_chart: row {name!r} needs at least one finite value, got {runs.tolist()}"
            )
    low = min(float(runs.min()) for runs in rows.values())
    high = max(float(runs.max()) for runs in rows.values())
    margin = (high - low) * 0.1 or abs(high) * 0.01 or 1.0
    with mpl.rc_context(_STYLE):
        height = 1.0 + 0.55 * len(rows)
        figure = Figure(figsize=(6.0, height), facecolor="white", layout="constrained")
        axes = figure.add_subplot()
        for row, runs in enumerate(rows.values()):
            axes.plot([runs.min(), runs.max()], [row, row], color=LINE_COLOURS[0], lw=2.0)
            axes.plot(runs, np.full(runs.size, row), "o", color=LINE_COLOURS[1], ms=6)
            mean = float(runs.mean())
            axes.text(runs.max(), row, f"  mean {mean:.{decimals}f}", va="center", ha="left")
        axes.set_yticks(range(len(rows)), list(rows))
        axes.set_ylim(len(rows) - 0.5, -0.5)  # the first row on top
        axes.set_xlim(low - margin, high + 4 * margin)  # room for the means
        axes.grid(True, axis="x", color="0.9")
        axes.set_axisbelow(True)
        axes.set_xlabel(value_label)
        if title:
            axes.set_title(title)
    return figure


_SVG_START = re.compile(r"<svg\b[^>]*>")


def svg(figure: Figure, alt: str) -> str:
    """The figure as SVG text, with `alt` as its ``<title>`` and accessible name.

    The text is the same on every run for the same figure, so a build that
    writes it changes nothing when nothing changed.

    Examples
    --------
    >>> from opbyop.plot import attention_heatmap, svg
    >>> text = svg(attention_heatmap([[1.0]], ["word"]), "One word.")
    >>> '<svg role="img" aria-label="One word."' in text
    True
    """
    if not alt.strip():
        raise ValueError("svg: alt must describe the picture, got an empty text")
    buffer = io.StringIO()
    with mpl.rc_context(_STYLE):
        figure.savefig(buffer, format="svg", facecolor="white", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog and doctype
    label = html.escape(alt, quote=True)
    opening = _SVG_START.search(text)
    assert opening is not None  # matplotlib always writes one
    start = opening.group(0).replace("<svg", f'<svg role="img" aria-label="{label}"', 1)
    return (
        text[: opening.start()]
        + f"{start}\n <title>{html.escape(alt)}</title>"
        + text[opening.end() :]
    )


@dataclass(frozen=True)
class Picture:
    """An SVG picture with its alt text; a notebook shows it as an ``<img>``."""

    svg: str
    alt: str

    def _repr_html_(self) -> str:
        data = base64.b64encode(self.svg.encode("utf-8")).decode("ascii")
        return (
            f'<img src="data:image/svg+xml;base64,{data}" '
            f'alt="{html.escape(self.alt, quote=True)}" style="max-width:100%">'
        )


def picture(figure: Figure, alt: str) -> Picture:
    """The figure as a `Picture`: the last line of a notebook cell shows it.

    Examples
    --------
    >>> from opbyop.plot import attention_heatmap, picture
    >>> shown = picture(attention_heatmap([[1.0]], ["word"]), "One word.")
    >>> shown._repr_html_().startswith('<img src="data:image/svg+xml')
    True
    """
    return Picture(svg(figure, alt), alt)
