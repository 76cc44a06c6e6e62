"""workbook_plots.py: what every plot script does with a figure it made, beside workbook_cli.py's flag rules.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    from workbook_plots import save_figure, say_figures_written
    save_figure(fig, os.path.join(out, "times.png"), dpi=120)   # provenance in its metadata, log ticks as text
    say_figures_written("plot_regression.py")                   # one line on stderr: what was written, where

save_figure writes the provenance line (common/provenance.py) into the file's metadata, a log axis's tick
labels as plain text (10\u2074, not TeX), and a PNG as 256 colours; matplotlib and PIL are imported only when
a figure is saved, so importing this module costs nothing before the flags and inputs are checked.
"""
import math
import os
import sys


_FIGURES_WRITTEN = []  # by save_figure, for say_figures_written


def save_figure(fig, path, dpi=120):
    """fig.savefig, with the provenance line (common/provenance.py) in the file's metadata where the
    format keeps text (PNG and SVG "Description", PDF "Subject"): a figure, like every result,
    says where it came from."""
    from provenance import line, record
    key = {".png": "Description", ".svg": "Description", ".pdf": "Subject"}.get(os.path.splitext(path)[1].lower())
    for ax in fig.get_axes():
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log":
                _plain_log_ticks(axis)
    fig.savefig(path, dpi=dpi, metadata={key: line(record())[2:]} if key else None)
    if key and path.lower().endswith(".png"):
        _to_palette(path)
    _FIGURES_WRITTEN.append(path)


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def _plain_log_ticks(axis):
    """A log axis's tick labels as plain text, 10\u2074 or 2\u00b9\u2070: matplotlib writes its own as
    TeX ('$\\mathdefault{10^{4}}$'), which workbook_needs turns off so that a '$' in a title from a
    file cannot stop a plot, and which would then show as written."""
    from matplotlib.ticker import FuncFormatter, NullFormatter
    base = axis.get_transform().base

    def label(value, _position):
        if value <= 0:
            return ""
        exponent = math.log(value, base)
        if abs(exponent - round(exponent)) > 1e-6:
            return ""
        return f"{base:g}" + str(int(round(exponent))).translate(_SUPERSCRIPT)
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(NullFormatter())


def _to_palette(path):
    """A PNG plot as 256 colours, its text (the provenance) kept: line plots use a few colours, and
    full colour made one of them three times the size for the same picture."""
    from PIL import Image, PngImagePlugin  # matplotlib's own dependency
    with Image.open(path) as image:
        text = PngImagePlugin.PngInfo()
        for k, v in image.text.items():
            text.add_text(k, v)
        small = image.convert("RGB").quantize(colors=256)
    small.save(path, optimize=True, pnginfo=text)


def say_figures_written(program):
    """One line on stderr naming the figures this run wrote, and where: a script that reads a
    results folder writes several, into a folder the reader may not have named (its default)."""
    if not _FIGURES_WRITTEN:
        print(f"{program}: no figure written (nothing in the results to plot)", file=sys.stderr)
        return
    def shown(folder):  # relative to where the reader is, when it lies below
        relative = os.path.relpath(folder or ".")
        return folder if relative.startswith("..") else relative
    folders = sorted({shown(os.path.dirname(p)) for p in _FIGURES_WRITTEN})
    names = ", ".join(os.path.basename(p) for p in _FIGURES_WRITTEN)
    print(f"{program}: wrote {names} into {', '.join(folders)}", file=sys.stderr)


if __name__ == "__main__":
    print("error: common/workbook_plots.py is a module the workbook's scripts import, not a program", file=sys.stderr)
    sys.exit(2)
