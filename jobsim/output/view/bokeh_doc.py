"""Bokeh's document JSON written directly, without Bokeh's Python side.

The page's figures are BokehJS models. Building them with Bokeh's Python classes costs
0.3 s to import them (every model class Bokeh has) and a millisecond or more per model to
make and serialise (each of a few hundred properties looked up through descriptors): more
than the rest of the page together for a small run. Here a model is a name and its
attributes, written as Bokeh 3.9 writes them (``json_item``): the attributes a figure sets,
in the class's order, each left out where it equals its default; a model in full where it
first appears and as ``{"id": ...}`` after, numbered ``v1``, ``v2``, … in that order; numeric
columns as gzip'd, base64'd ``ndarray``s (64-bit integers as 32-bit where they fit); NaN and
infinities as ``number`` objects. ``tests/test_bokeh_doc.py`` builds the same figures with
Bokeh itself and compares the JSON (the pin on Bokeh's version is what keeps the schema and
the inlined BokehJS in step).

The pieces are the ones the page uses: ``figure`` (its ranges, axes, grids, toolbar),
``glyph`` (a renderer with its glyph and the non-selected and muted copies Bokeh's glyph
methods add), tools, legends, spans and callbacks.
"""

from __future__ import annotations

import base64
import gzip
import math
import sys
from typing import Any

import numpy as np

#: the gzip level Bokeh compresses arrays with (its default, ``BOKEH_COMPRESSION_LEVEL``)
COMPRESSION = 2
#: the column types Bokeh writes as binary arrays (its ``BINARY_ARRAY_TYPES``)
_BINARY = frozenset(np.dtype(t) for t in (np.bool_, np.uint8, np.int8, np.uint16, np.int16,
                                          np.uint32, np.int32, np.float32, np.float64))


class Model:
    """A BokehJS model: its class name and its attributes (in the order written)."""

    __slots__ = ("name", "attrs")

    def __init__(self, kind: str, /, **attrs: Any) -> None:
        self.name = kind
        self.attrs = {k: v for k, v in attrs.items() if v is not _OMIT}


class _Omit:
    """An attribute left out (it equals its default)."""


_OMIT = _Omit()


def value(v: Any) -> dict[str, Any]:
    """A vectorised property's single value."""
    return {"type": "value", "value": v}


def field(name: str, transform: Model | None = None) -> dict[str, Any]:
    """A vectorised property read from a column (through ``transform``)."""
    out: dict[str, Any] = {"type": "field", "field": name}
    if transform is not None:
        out["transform"] = transform
    return out


class Map(dict):
    """A dict written as Bokeh's ``map`` (a JSON object cannot have number keys)."""


def item(root: Model, version: str) -> dict[str, Any]:
    """The JSON item of ``root`` (``bokeh.embed.json_item``'s shape), ids numbered."""
    ids: dict[int, str] = {}
    doc = {"version": version, "title": "",
           "config": _encode(Model("DocumentConfig", notifications=Model("Notifications")),
                             ids),
           "roots": [_encode(root, ids)]}
    return {"target_id": None, "root_id": ids[id(root)], "doc": doc, "version": version}


def _encode(x: Any, ids: dict[int, str]) -> Any:
    if isinstance(x, Model):
        key = id(x)
        if key in ids:
            return {"id": ids[key]}
        ids[key] = f"v{len(ids) + 1}"
        rep: dict[str, Any] = {"type": "object", "name": x.name, "id": ids[key]}
        if x.attrs:
            rep["attributes"] = {k: _encode(v, ids) for k, v in x.attrs.items()}
        return rep
    if isinstance(x, Map):
        if not x:
            return {"type": "map"}
        return {"type": "map", "entries": [[_encode(k, ids), _encode(v, ids)]
                                           for k, v in x.items()]}
    if isinstance(x, dict):
        return {k: _encode(v, ids) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_encode(v, ids) for v in x]
    if isinstance(x, np.ndarray):
        return _ndarray(x)
    if isinstance(x, float):
        if math.isnan(x):
            return {"type": "number", "value": "nan"}
        if math.isinf(x):
            return {"type": "number", "value": "-inf" if x < 0 else "+inf"}
    return x


def _ndarray(a: np.ndarray) -> dict[str, Any]:
    """A numeric column as Bokeh writes it (its ``transform_array``, then gzip at
    ``COMPRESSION`` with mtime 1, then base64)."""
    for wide, narrow in ((np.int64, np.int32), (np.uint64, np.uint32)):
        if a.dtype == wide:
            info = np.iinfo(narrow)
            if not np.any((a < info.min) | (info.max < a)):
                a = a.astype(narrow, casting="unsafe")
    a = np.ascontiguousarray(a)
    if a.dtype not in _BINARY:
        # Bokeh would write such a column as a list of numbers; the page has none
        raise TypeError(f"a column of {a.dtype} cannot be written as a binary array")
    data = base64.b64encode(gzip.compress(a.tobytes(), mtime=1,
                                          compresslevel=COMPRESSION)).decode("utf-8")
    return {"type": "ndarray", "array": {"type": "bytes", "data": data},
            "shape": list(a.shape), "dtype": a.dtype.name, "order": sys.byteorder}


# --- sources, renderers and glyphs -----------------------------------------------------------

def source(data: dict[str, Any], name: str | None = None) -> Model:
    """A ColumnDataSource of ``data`` (columns in the given order)."""
    return Model("ColumnDataSource", name=name if name is not None else _OMIT,
                 selected=Model("Selection", indices=[], line_indices=[]),
                 selection_policy=Model("UnionRenderers"), data=Map(data))


#: each glyph's properties in its class's order, with the defaults of those a figure may
#: leave at them (a vectorised default as written, ``value(...)``)
_GLYPHS: dict[str, tuple[tuple[str, Any], ...]] = {
    "HBar": (("y", None), ("height", None), ("left", None), ("right", None),
             ("line_color", value("black")), ("line_alpha", value(1.0)),
             ("line_width", value(1)), ("fill_color", value("gray")),
             ("fill_alpha", value(1.0)), ("hatch_alpha", value(1.0))),
    "Quad": (("left", None), ("right", None), ("bottom", None), ("top", None),
             ("line_color", value("black")), ("line_alpha", value(1.0)),
             ("line_width", value(1)), ("fill_color", value("gray")),
             ("fill_alpha", value(1.0)), ("hatch_color", value("black")),
             ("hatch_alpha", value(1.0)), ("hatch_pattern", value(None))),
    "Scatter": (("x", None), ("y", None), ("size", value(4)), ("line_color", value("black")),
                ("line_alpha", value(1.0)), ("line_width", value(1)),
                ("fill_color", value("gray")), ("fill_alpha", value(1.0)),
                ("hatch_alpha", value(1.0)), ("marker", value("circle"))),
    "Step": (("x", None), ("y", None), ("line_color", "black"), ("line_alpha", 1.0),
             ("line_width", 1), ("mode", "before")),
    "VSpan": (("x", None), ("line_color", value("black")), ("line_alpha", value(1.0)),
              ("line_width", value(1)), ("line_dash", value([]))),
}
#: the alpha properties Bokeh's glyph methods set on the non-selected (0.1) and muted (0.2)
#: copies of a glyph, by what it draws
_ALPHAS = {"HBar": ("line_alpha", "fill_alpha", "hatch_alpha"),
           "Quad": ("line_alpha", "fill_alpha", "hatch_alpha"),
           "Scatter": ("line_alpha", "fill_alpha", "hatch_alpha"),
           "Step": ("line_alpha",), "VSpan": ("line_alpha",)}
_SCALAR = {"Step"}  # whose visual properties are plain values, not ``value(...)``


def _same(a: Any, b: Any) -> bool:
    """Equal as Bokeh compares a property's value to its default (1 == 1.0 too)."""
    return a == b and not (isinstance(a, bool) != isinstance(b, bool))


def _glyph(kind: str, props: dict[str, Any]) -> Model:
    attrs = {}
    for name, default in _GLYPHS[kind]:
        if name in props and not (default is not None and _same(props[name], default)):
            attrs[name] = props[name]
    return Model(kind, **attrs)


def glyph(kind: str, data_source: Model, name: str | None = None, view: Model | None = None,
          nonselection: dict[str, float] | None = None, **props: Any) -> Model:
    """A GlyphRenderer as Bokeh's glyph methods make it: the glyph with ``props`` (written
    as given: ``value(...)``, ``field(...)``, or plain for a line glyph), its non-selected
    copy (alphas 0.1, or ``nonselection``'s) and its muted copy (alphas 0.2)."""
    alpha = (lambda a: a) if kind in _SCALAR else value

    def copy(level: float, given: dict[str, float]) -> Model:
        return _glyph(kind, {**props, **{k: alpha(given.get(k, level))
                                         for k in _ALPHAS[kind]}})

    return Model("GlyphRenderer", name=name if name is not None else _OMIT,
                 data_source=data_source,
                 view=Model("CDSView", filter=Model("AllIndices")) if view is None else view,
                 glyph=_glyph(kind, props), nonselection_glyph=copy(0.1, nonselection or {}),
                 muted_glyph=copy(0.2, {}))


# --- figures -------------------------------------------------------------------------------

def _axis(label: str | None, ticker: Model | None = None,
          overrides: Map | None = None) -> Model:
    return Model("LinearAxis",
                 ticker=ticker or Model("BasicTicker", mantissas=[1, 2, 5]),
                 formatter=Model("BasicTickFormatter"),
                 axis_label=label if label is not None else _OMIT,
                 major_label_overrides=overrides if overrides else _OMIT,
                 major_label_policy=Model("AllLabels"))


def _box_zoom() -> Model:
    nan = math.nan
    overlay = Model("BoxAnnotation", syncable=False, line_color="black", line_alpha=1.0,
                    line_width=2, line_dash=[4, 4], fill_color="lightgrey", fill_alpha=0.5,
                    level="overlay", visible=False, left=nan, right=nan, top=nan, bottom=nan,
                    left_units="canvas", right_units="canvas", top_units="canvas",
                    bottom_units="canvas",
                    handles=Model("BoxInteractionHandles", all=Model(
                        "AreaVisuals", fill_color="white", hover_fill_color="lightgray")))
    return Model("BoxZoomTool", dimensions="both", overlay=overlay)


class Figure:
    """A figure as ``bokeh.plotting.figure`` makes it with the page's settings: the x-pan,
    x-wheel-zoom (active on scroll), box-zoom and reset tools (and save), the toolbar above
    without Bokeh's logo, linear axes left and below with their grids, WebGL output, the
    width of the page. Glyphs, tools and layouts are added to it, then ``model()``."""

    def __init__(self, height: int, x_range: Model, y_range: Model | None = None,
                 name: str | None = None, title: str | None = None,
                 x_axis_label: str | None = None, y_axis_label: str | None = None,
                 y_labels: dict[float, str] | None = None, save: bool = False) -> None:
        """``y_labels``: ticks at these values, labelled with these texts, and no
        horizontal grid (the timeline's rows) instead of numbers."""
        self.height, self.x_range, self.name, self.title = height, x_range, name, title
        self.y_range = y_range if y_range is not None else Model("DataRange1d")
        self.xaxis = _axis(x_axis_label)
        self.yaxis = _axis(y_axis_label) if y_labels is None else _axis(
            y_axis_label, Model("FixedTicker", ticks=list(y_labels), minor_ticks=[]),
            Map(y_labels))
        self.ygrid_visible = y_labels is None
        self.wheel = Model("WheelZoomTool", dimensions="width", renderers="auto")
        self.tools = [Model("PanTool", dimensions="width"), self.wheel, _box_zoom(),
                      Model("ResetTool")] + ([Model("SaveTool")] if save else [])
        self.renderers: list[Model] = []
        self.center: list[Model] = []
        self.above: list[Model] = []
        self.legend_items: list[Model] = []
        self.taps: list[Model] = []

    def add(self, renderer: Model, legend_label: str | None = None) -> Model:
        """A glyph renderer (``glyph``), with its legend entry if labelled."""
        self.renderers.append(renderer)
        if legend_label is not None:
            self.legend_items.append(Model("LegendItem", label=value(legend_label),
                                           renderers=[renderer]))
        return renderer

    def legend(self, click_hide: bool = False) -> None:
        """The legend of the labelled glyphs, one row above the frame (over no line, and
        the figures' axes stay aligned)."""
        self.above.append(Model("Legend", location="top_left", orientation="horizontal",
                                border_line_color=None,
                                click_policy="hide" if click_hide else _OMIT,
                                items=self.legend_items))

    def model(self) -> Model:
        grids = [Model("Grid", axis=self.xaxis),
                 Model("Grid", visible=_OMIT if self.ygrid_visible else False, dimension=1,
                       axis=self.yaxis)]
        return Model(
            "Figure", name=self.name if self.name is not None else _OMIT,
            js_event_callbacks=Map(tap=self.taps) if self.taps else _OMIT,
            height=self.height, sizing_mode="stretch_width", x_range=self.x_range,
            y_range=self.y_range, x_scale=Model("LinearScale"), y_scale=Model("LinearScale"),
            title=Model("Title", text=self.title) if self.title else Model("Title"),
            renderers=self.renderers,
            toolbar=Model("Toolbar", tools=self.tools, logo=None, active_scroll=self.wheel),
            toolbar_location="above", left=[self.yaxis], above=self.above or _OMIT,
            below=[self.xaxis], center=grids + self.center, output_backend="webgl")


def hover(renderers: list[Model], tooltips: str, formatters: dict[str, Model] | None = None,
          mode: str | None = None) -> Model:
    """A HoverTool over ``renderers``."""
    return Model("HoverTool", renderers=renderers, tooltips=tooltips,
                 formatters=Map(formatters) if formatters else _OMIT, sort_by=None,
                 mode=mode if mode is not None else _OMIT)


def tap(renderers: list[Model], callback: Model) -> Model:
    """A TapTool over ``renderers`` calling ``callback``."""
    return Model("TapTool", renderers=renderers, callback=callback)


def custom_js(code: str, args: dict[str, Model] | None = None) -> Model:
    """A CustomJS callback (``args``: the models it reads, by name)."""
    return Model("CustomJS", args=Map(args) if args else _OMIT, code=code)


def column(children: list[Model]) -> Model:
    """Figures one above the other, the page's width."""
    return Model("Column", sizing_mode="stretch_width", children=children)
