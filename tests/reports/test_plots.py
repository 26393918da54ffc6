"""The report's log axes read (issue #22): a curve within one or two decades gets labels at 1, 2 and 5 of each
decade, where matplotlib's default labelled the decades alone (one or two labels)."""
from reports.html.plots import log_axis, new_figure


def visible_labels(ax, axis):
    fig = ax.figure
    fig.canvas.draw()
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    target = ax.yaxis if axis == "y" else ax.xaxis
    return [t.get_text() for t in target.get_majorticklabels() if t.get_text() and lo <= t.get_position()[axis == "y"] <= hi]


def test_a_log_axis_within_two_decades_has_labels_to_read():
    fig, (ax,) = new_figure()
    ax.plot([1, 2, 3], [1.3, 4.0, 17.0])
    log_axis(ax, "y")
    labels = visible_labels(ax, "y")
    assert {"2", "5", "10"} <= set(labels), labels  # the default labelled 10 alone
    fig, (ax,) = new_figure()
    ax.plot([0.3, 40], [1, 2])
    log_axis(ax, "x")
    assert {"0.5", "1", "2", "5", "10", "20"} <= set(visible_labels(ax, "x"))


def test_roofline_labels_do_not_pile_up():
    """Twenty shapes of one op on top of each other get one label, a far point its own, a suspect one first."""
    from reports.html.sections.kernels import _place_labels
    fig, (ax,) = new_figure()
    points = [(True, "gemm", 20 + 0.01 * i, 100 + 0.1 * i) for i in range(20)] + [(True, "softmax", 0.5, 4.0), (False, "gemm !", 21, 101)]
    for _, _, x, y in points:
        ax.scatter(x, y)
    log_axis(ax, "x")
    log_axis(ax, "y")
    _place_labels(ax, points)
    texts = [t.get_text() for t in ax.texts]
    assert sorted(texts) == ["gemm !", "softmax"], texts
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.texts]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


class FigureSink:
    """A PlotSink that keeps the figures, to read what was drawn."""

    def __init__(self):
        self.figures = {}

    def save(self, fig, name, title, alt):
        self.figures[name] = fig
        return {"kind": "plot", "file": f"{name}.png", "title": title, "alt": alt, "png_b64": ""}


def drawn_bars(ax):
    """Each error bar's (low, high) as drawn: the vertical or horizontal segments of the axes' error bar containers."""
    from matplotlib.container import ErrorbarContainer
    spans = []
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer):
            for collection in c.lines[2]:
                for seg in collection.get_segments():
                    (x0, y0), (x1, y1) = seg
                    spans.append(tuple(sorted((y0, y1))) if x0 == x1 else tuple(sorted((x0, x1))))
    return spans


def test_measured_figures_carry_their_spread(write_doc):
    """Every measured curve shows the iterations' spread (issue #22): a kernel's roofline point and a host's memory
    bandwidth bar span the rate at the p95 time to the rate at the fastest time (value x median / p95 .. x median / min)."""
    import pytest
    from reports.common.load import load_result
    from reports.html.sections.kernels import SECTION as KERNELS
    from reports.html.sections.links import SECTION as LINKS
    from synthetic import make_ceiling, make_doc, make_kernel, make_link, stats

    kernel = make_kernel("gemm", "small", 0.1, 20.0, 0.2, 50.0)
    times = [4.0, 5.0, 5.0, 5.0, 10.0, 20.0]  # median 5: 100 GFLOP/s at 5 us, 25 at the p95 (20 us), 125 at the fastest (4 us)
    kernel.update(time_us=stats(times), samples_us=times, tflops=0.1)
    link = make_link("host_memory_copy", "host", "host", engine="cpu", bw=10.0, processes=1, threads_per_process=1, array_bytes=1 << 20)
    link_times = [500.0, 1000.0, 1000.0, 1000.0, 2000.0]  # the record's bandwidth at the median time; half at p95, twice at the fastest
    link["time_us"], link["samples_us"] = stats(link_times), link_times
    doc = make_doc([kernel, make_ceiling("compute", 0.2), make_ceiling("memory", 50.0, level="dram"), link])
    results = [load_result(write_doc("k.json", doc))]

    sink = FigureSink()
    KERNELS.build(results, sink)
    (ax,) = sink.figures["kernels_roofline"].axes
    assert drawn_bars(ax) == [pytest.approx((25.0, 125.0))]
    LINKS.build(results, sink)
    ax = sink.figures["links_host_memory"].axes[0]
    bw = link["bandwidth_gbps"]
    assert drawn_bars(ax) == [pytest.approx((bw / 2, bw * 2))]


def test_legends_stay_off_the_axis_label_and_the_plot(write_doc):
    """A legend placed under the axes at a fixed offset sat on the x label once three runs stacked their bars
    (issue #22: "a legend overlaps an axis label"): the phase plot's legend now stands beside the axes, clear of
    both the label and the plotting area."""
    from reports.common.load import load_result
    from reports.html.sections.training import SECTION as TRAINING
    from synthetic import make_doc, make_train, stats

    phases = {p: stats([100.0 * (i + 1)] * 3) for i, p in enumerate(("data", "forward", "backward", "sync", "optimizer"))}
    runs = [make_train(preset=preset, phases_us=phases) for preset in ("tiny", "small", "base")]
    sink = FigureSink()
    TRAINING.build([load_result(write_doc("t.json", make_doc(runs)))], sink)
    fig = sink.figures["training_phases"]
    fig.canvas.draw()
    (ax,) = [a for a in fig.axes if a.get_legend()]
    legend = ax.get_legend().get_window_extent()
    assert not legend.overlaps(ax.xaxis.label.get_window_extent())
    assert not legend.overlaps(ax.get_window_extent())
