"""The ground floor for runs: what every experiment's measurement uses and no experiment owns.

Modules, one job each (importing any of them imports nothing heavy; torch is imported inside functions):

- ``launcher``  start torchrun workers as a subprocess with a timeout, read rank 0's result, leave nothing running
- ``watchdog``  kill a distributed job whose launching process died (``python -m pytest_genai.runtime.watchdog``)
- ``rank``      what every torchrun rank does at its start and end (rank environment, result file, clean exit)
- ``procgroup`` one process-group setup per device kind (cpu -> gloo, cuda -> nccl, hpu -> hccl)
- ``timing``    synchronized, warmed-up timings and medians; the slowest rank per step
- ``memtrack``  peak live tensor bytes on the CPU, with an optional budget standing in for the device memory
- ``threads``   the cores this process may use and torch's intra-op thread count
- ``pressure``  how contended the CPU was during a measurement (Linux PSI), for timing verdicts
- ``instructions`` instructions a CPU step executes, counted by valgrind: a statistic a CPU load does not move

Experiments import the core (devices, claims, results), this package and themselves, never each other.
"""
