"""The report's log axes read (issue #22): a curve within one or two decades gets labels at 1, 2 and 5 of each
decade, where matplotlib's default labelled the decades alone (one or two labels)."""
from reports.plots import log_axis, new_figure


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
    from reports.sections.kernels import _place_labels
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
