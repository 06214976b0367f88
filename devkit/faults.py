"""Kill what clusters kill, in a service started locally (devkit.local_service) or a local cluster
(devkit.local_cluster): every process of one replica kind, or the job tracker's actor, for the fault tests and
scripts/chaos.py."""

import signal

import psutil

from devkit.local_service import LocalService


def processes_under(root_pid: int, kind: str) -> list[psutil.Process]:
    """The live processes of one replica kind (or the tracker actor) below a process: Ray names each worker
    process after the actor it hosts (`ray::ServeReplica:stt:Transcriber`)."""
    title = "ray::JobTracker" if kind == "JobTracker" else f"ray::ServeReplica:stt:{kind}"
    found = []
    for process in psutil.Process(root_pid).children(recursive=True):
        try:
            command = " ".join(process.cmdline())
        except psutil.Error:
            continue
        if command.startswith(title) and (command == title or not command[len(title)].isalnum()):
            found.append(process)
    return found


def processes_of(service: LocalService, kind: str) -> list[psutil.Process]:
    """The live processes of one replica kind (or the tracker actor) under this service's `serve run`."""
    assert service.process is not None, "the service is not running"
    return processes_under(service.process.pid, kind)


def kill_processes(victims: list[psutil.Process]) -> int:
    """SIGKILL, as the OOM killer or a preempted node would; returns how many processes."""
    for process in victims:
        process.send_signal(signal.SIGKILL)
    return len(victims)


def kill(service: LocalService, kind: str) -> int:
    """SIGKILL every process of one kind under this service, as the OOM killer or a preempted node would."""
    return kill_processes(processes_of(service, kind))
