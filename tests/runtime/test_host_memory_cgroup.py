"""Host memory for the fit checks: the node's MemAvailable or the job's cgroup limit, whichever is smaller (a Slurm
job or a container may use far less than the node has free). Fake /proc and /sys/fs/cgroup trees."""
from pytest_genai.runtime.memtrack import cgroup_available_bytes, host_available_bytes

GiB = 2**30


def _meminfo(tmp_path, available_gib):
    f = tmp_path / "meminfo"
    f.write_text(f"MemTotal: {512 * GiB // 1024} kB\nMemAvailable: {available_gib * GiB // 1024} kB\n")
    return str(f)


def _proc(tmp_path, text):
    f = tmp_path / "cgroup"
    f.write_text(text)
    return str(f)


def _write(folder, **files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (folder / name.replace("_", ".", 1)).write_text(f"{value}\n")


def test_cgroup_v2_memory_max_under_meminfo_wins(tmp_path):
    root = tmp_path / "sys"
    _write(root, cgroup_controllers="memory")
    _write(root / "system.slice" / "slurmstepd.scope" / "job_7", memory_max=64 * GiB, memory_current=4 * GiB)
    proc = _proc(tmp_path, "0::/system.slice/slurmstepd.scope/job_7\n")
    assert cgroup_available_bytes(str(root), proc) == 60 * GiB
    assert host_available_bytes(_meminfo(tmp_path, 400), str(root), proc) == 60 * GiB


def test_an_ancestor_limit_counts_and_max_means_none(tmp_path):
    root = tmp_path / "sys"
    _write(root, cgroup_controllers="memory")
    _write(root / "job", memory_max=32 * GiB, memory_current=2 * GiB)
    _write(root / "job" / "step", memory_max="max", memory_current=1 * GiB)
    proc = _proc(tmp_path, "0::/job/step\n")
    assert cgroup_available_bytes(str(root), proc) == 30 * GiB
    _write(root / "job", memory_max="max")
    assert cgroup_available_bytes(str(root), proc) is None
    assert host_available_bytes(_meminfo(tmp_path, 100), str(root), proc) == 100 * GiB


def test_cgroup_v1_limit_in_bytes(tmp_path):
    root = tmp_path / "sys"
    _write(root / "memory" / "slurm" / "uid_1" / "job_9", memory_limit_in_bytes=16 * GiB,
           memory_usage_in_bytes=1 * GiB)
    _write(root / "memory", memory_limit_in_bytes=9223372036854771712, memory_usage_in_bytes=3 * GiB)  # no limit
    proc = _proc(tmp_path, "5:cpu,cpuacct:/slurm/uid_1/job_9\n4:memory:/slurm/uid_1/job_9\n")
    assert host_available_bytes(_meminfo(tmp_path, 200), str(root), proc) == 15 * GiB


def test_in_a_container_the_mount_root_is_the_own_cgroup(tmp_path):
    root = tmp_path / "sys"
    _write(root / "memory", memory_limit_in_bytes=8 * GiB, memory_usage_in_bytes=2 * GiB)
    proc = _proc(tmp_path, "4:memory:/docker/abc123\n")  # the host's path, not mounted inside
    assert host_available_bytes(_meminfo(tmp_path, 200), str(root), proc) == 6 * GiB


def test_no_cgroup_leaves_meminfo(tmp_path):
    assert host_available_bytes(_meminfo(tmp_path, 7), str(tmp_path / "nosys"), str(tmp_path / "noproc")) == 7 * GiB
    assert host_available_bytes(str(tmp_path / "none"), str(tmp_path / "nosys"), str(tmp_path / "noproc")) is None


def test_the_cpus_memory_capacity_is_the_cgroup_limit_where_smaller(tmp_path):
    """The CPU's 'spec' capacity (what the fine-tuning planner fits CPU ranks into) was the node's physical RAM."""
    from pytest_genai.devices.cpu_probe import memory_capacity_gb

    root = tmp_path / "sys"
    _write(root, cgroup_controllers="memory")
    _write(root / "job", memory_max=2 * 10**9, memory_current=10**9)
    proc = _proc(tmp_path, "0::/job\n")
    assert memory_capacity_gb(str(root), proc) == 2.0
    (tmp_path / "other").mkdir()
    unlimited = _proc(tmp_path / "other", "0::/\n")
    physical = memory_capacity_gb(str(tmp_path / "nosys"), unlimited)
    assert physical is not None and physical > 2.0
