"""The form of a collective record's MPI call, its `issue` (collectives --issue): "blocking" (MPI_Allreduce) or
"nonblocking" (MPI_Iallreduce waited for at once, as training issues its collectives). A record of the MPI backend
written before the field existed was a blocking call; NCCL's records have no field, NCCL having one form."""
from .json_types import Record

BLOCKING, NONBLOCKING = "blocking", "nonblocking"
ISSUES = (BLOCKING, NONBLOCKING)


def issue_of(record: Record) -> str | None:
    """The record's form on MPI, the field's absence read as blocking; None where the backend has one form."""
    if record.get("issue"):
        return str(record["issue"])
    return BLOCKING if record.get("backend") == "mpi" else None
