"""`predict`: the cost of a collective at sizes and group sizes not measured, from this cluster's own `collectives`
results: the measured series (series), the alpha-beta fit of each (fit), the algorithm-aware form that carries a fit to
other group sizes (formulas), and the command line (commands). Layout and step prediction (issue #41) is not here yet."""

BUILT_ON: tuple[str, ...] = ()
