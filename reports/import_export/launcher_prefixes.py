"""The prefixes a launcher puts before each line of its ranks' output, taken off before an import reads the
text, so that a log kept the way multi-node runs usually keep theirs reads as the tool printed it:

- Open MPI's mpirun --tag-output, '[1,0]<stdout>:' (the job, the rank, the stream; Open MPI 5's PRRTE adds a
  space after the colon), and --timestamp-output, ctime's date before the stream, 'Sat Nov 28 20:43:12 2026<stdout>:',
  with both flags 'Sat Nov 28 20:43:12 2026[1,0]<stdout>:' (orte/mca/iof; the samples in tests/reports/data/import
  were captured from Open MPI 4.1's mpirun);
- Slurm's srun --label, the task id right-aligned to the widest one and ': ' ('0: ', ' 0: ' from ten tasks on,
  'P1 0: ' for a heterogeneous job's component);
- MPICH's (and Intel MPI's) mpiexec -prepend-rank, Hydra's pattern '[%r] ' ('[0] ').

A file is taken as prefixed by the one style that most of its non-blank lines carry; only the lines carrying it
lose it (a launcher's own messages are unprefixed). The line numbers stay those of the file.
"""
import re

STYLES = [
    re.compile(r"^(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?\[\d+,\d+\]<std(?:out|err|diag)>: ?"),
    re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}<std(?:out|err|diag)>: ?"),
    re.compile(r"^(?:P\d+ )? *\d+: "),
    re.compile(r"^\[\d+\] "),
]


def strip(text: str) -> str:
    """`text` without the launcher prefix most of its lines carry; as it is when most carry none."""
    lines = text.splitlines()
    filled = [line for line in lines if line.strip()]
    best, most = None, 0
    for style in STYLES:
        n = sum(1 for line in filled if style.match(line))
        if n > most:
            best, most = style, n
    if best is None or 2 * most <= len(filled):
        return text
    return "\n".join(best.sub("", line, count=1) for line in lines) + "\n"
