//! The load beside a traced run ([`NodeLoad`]): how much of the node's processor time other
//! processes, and the hypervisor, took while the command ran.
//!
//! Read from Linux's `/proc/stat` before and after the run (the node's busy, idle and steal
//! time) and from the processor time of the finished command and its descendants
//! (`getrusage(RUSAGE_CHILDREN)`: the ranks, reaped by the launcher, count in it). What the node
//! was busy with beyond that was other processes. A trace is as typical as the run it recorded:
//! three traces of one LAMMPS input, taken while a compiler ran beside them, recorded 0.64 to
//! 1.30 s of processor time per rank for the same work, and a skeleton replays what its trace
//! recorded.
//!
//! # Complexity
//! O(processors) to read `/proc/stat`.

use mpiskel_trace::{NodeLoad, RunMeta};

/// The node's processor time so far, in seconds: busy (user, nice, system, irq, softirq),
/// steal, and all of it (idle and iowait included), and its processors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeTimes {
    busy_s: f64,
    steal_s: f64,
    total_s: f64,
    processors: u32,
}

/// The node's times now; `None` where `/proc/stat` cannot be read (not Linux).
pub fn node_times() -> Option<NodeTimes> {
    parse_stat(&std::fs::read_to_string("/proc/stat").ok()?, ticks_per_second()?)
}

/// Clock ticks per second, the unit of `/proc/stat`.
fn ticks_per_second() -> Option<f64> {
    let t = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    (t > 0).then_some(t as f64)
}

/// The times in a `/proc/stat` text, its fields in `ticks` per second.
pub fn parse_stat(text: &str, ticks: f64) -> Option<NodeTimes> {
    let mut lines = text.lines();
    let all = lines.find(|l| l.starts_with("cpu "))?;
    let f: Vec<f64> = all.split_whitespace().skip(1).map_while(|x| x.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest time is within user).
    if f.len() < 8 {
        return None;
    }
    let processors = text
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count() as u32;
    Some(NodeTimes {
        busy_s: (f[0] + f[1] + f[2] + f[5] + f[6]) / ticks,
        steal_s: f[7] / ticks,
        total_s: f[..8].iter().sum::<f64>() / ticks,
        processors: processors.max(1),
    })
}

/// Processor seconds of this process's finished and reaped descendants so far.
pub fn children_cpu_s() -> Option<f64> {
    use nix::sys::resource::{getrusage, UsageWho};
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).ok()?;
    let s = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    Some(s(u.user_time()) + s(u.system_time()))
}

/// The load beside a command that took `own_s` processor seconds between the node's times
/// `before` and `after`; `None` where the node's clock did not move.
pub fn load_between(before: &NodeTimes, after: &NodeTimes, own_s: f64) -> Option<NodeLoad> {
    let total = after.total_s - before.total_s;
    if total <= 0.0 {
        return None;
    }
    let busy = (after.busy_s - before.busy_s).max(0.0);
    let steal = (after.steal_s - before.steal_s).max(0.0);
    Some(NodeLoad {
        processors: after.processors,
        others: ((busy - own_s.max(0.0)) / total).clamp(0.0, 1.0),
        steal: (steal / total).clamp(0.0, 1.0),
    })
}

/// The share of the node's processor time, taken by others (processes and the hypervisor),
/// from which `build` says that the trace recorded a loaded run.
pub const NOTED_SHARE: f64 = 0.1;

/// What `build` says of a trace recorded beside the load `l`, where it is at least
/// [`NOTED_SHARE`].
pub fn describe(l: &NodeLoad) -> Option<String> {
    (l.others + l.steal >= NOTED_SHARE).then(|| {
        format!(
            "while the application was traced, {}: its compute blocks ran beside them (slower, \
             in processor time too, where they share caches and memory), and the skeleton \
             replays the run as it was then; a trace made on a quiet node stands for a typical \
             run",
            l.summary()
        )
    })
}

/// The share of the application's time, per rank on average, from which `build` says that the
/// ranks were off their processors between calls beyond what sharing the node explains.
pub const NOTED_OFF_PROCESSOR: f64 = 0.05;

/// What `build` says of a trace whose ranks were off their processors between calls
/// ([`mpiskel_trace::off_processor`]) for at least [`NOTED_OFF_PROCESSOR`] of the application's
/// `app_s` seconds.
pub fn describe_off_processor(
    off: &mpiskel_trace::off_processor::OffProcessor,
    app_s: f64,
) -> Option<String> {
    (app_s > 0.0 && off.mean_s() >= NOTED_OFF_PROCESSOR * app_s).then(|| {
        format!(
            "between calls the ranks were off their processors {}: they slept, waited for \
             input or output, or other threads of theirs computed; the skeleton replays the \
             processor time of each block in one thread, so its prediction leaves that time \
             out (`mpiskel inspect` shows it per rank; `mpiskel trace --wall-time` records wall \
             time instead, which keeps it but counts the time the ranks waited for each other's \
             processors too)",
            off.summary(app_s)
        )
    })
}

/// The share of a traced run's wall time outside `MPI_Init`…`MPI_Finalize` from which `build`
/// says so (beyond [`NOTED_OUTSIDE_S`]).
pub const NOTED_OUTSIDE: f64 = 0.2;

/// Seconds outside `MPI_Init`…`MPI_Finalize` below which nothing is said: the launcher's start
/// and end and `MPI_Init` itself take 1.2–2.0 s for 4 ranks here (the fixture traces `ring`
/// and `lammps-melt`).
pub const NOTED_OUTSIDE_S: f64 = 3.0;

/// What `build` and `inspect` say of a run whose launcher ran for `m.wall_s` seconds while the
/// application's ranks spent `app_s` between `MPI_Init` and `MPI_Finalize`, where the rest is
/// at least [`NOTED_OUTSIDE`] of the run and [`NOTED_OUTSIDE_S`]: a skeleton predicts the
/// time between the two, not what the program does before or after them (reading input before
/// `MPI_Init`, writing results after `MPI_Finalize`).
pub fn describe_outside_mpi(m: &RunMeta, app_s: f64) -> Option<String> {
    let outside = m.wall_s - app_s;
    (!m.time_only
        && app_s > 0.0
        && outside >= NOTED_OUTSIDE_S
        && outside >= NOTED_OUTSIDE * m.wall_s)
        .then(|| {
            format!(
                "the traced run took {:.3} s, of which the application spent {app_s:.3} s \
                 between MPI_Init and MPI_Finalize: the skeleton predicts that part only, not the \
                 {outside:.3} s before MPI_Init and after MPI_Finalize (the launcher's start, \
                 input read before MPI_Init, output written after MPI_Finalize)",
                m.wall_s
            )
        })
}

/// What `build` says of a trace of one run whose ranks outnumbered its node's processors:
/// such a run's time varies from one run to the next (how the ranks fall on the cores, what the
/// host does), and the skeleton replays the one traced.
pub fn describe_single_run(m: &RunMeta) -> Option<String> {
    let l = m.node_load?;
    (m.runs_app_s.len() <= 1 && m.ranks > l.processors && !m.time_only).then(|| {
        format!(
            "the trace is one run of {} ranks on {} processors, and the skeleton replays that \
             run: where ranks share processors, the same run's time varies from one run to the \
             next; `mpiskel trace --runs 3` keeps the run of median time",
            m.ranks, l.processors
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  1000 0 200 8000 100 0 0 700 0 0\n\
                        cpu0 500 0 100 4000 50 0 0 350 0 0\n\
                        cpu1 500 0 100 4000 50 0 0 350 0 0\n\
                        intr 1 2 3\nctxt 42\n";

    #[test]
    fn the_node_times_are_read_in_seconds() {
        let t = parse_stat(STAT, 100.0).unwrap();
        assert_eq!(t.processors, 2);
        assert!((t.busy_s - 12.0).abs() < 1e-9 && (t.steal_s - 7.0).abs() < 1e-9, "{t:?}");
        assert!((t.total_s - 100.0).abs() < 1e-9, "{t:?}");
        assert!(parse_stat("intr 1\n", 100.0).is_none());
        assert!(parse_stat("cpu 1 2 3\n", 100.0).is_none());
    }

    #[test]
    fn others_are_the_busy_time_the_command_did_not_use() {
        let before = parse_stat(STAT, 100.0).unwrap();
        // 4 s of wall time on 2 processors: 8 s, 5 busy (3 the command's own), 1 stolen.
        let after =
            parse_stat("cpu  1500 0 200 8200 100 0 0 800 0 0\ncpu0 1\ncpu1 1\n", 100.0).unwrap();
        let l = load_between(&before, &after, 3.0).unwrap();
        assert_eq!(l.processors, 2);
        assert!((l.others - 2.0 / 8.0).abs() < 1e-9 && (l.steal - 1.0 / 8.0).abs() < 1e-9, "{l:?}");
        // A command that used more than the node says was busy leaves no one else.
        assert_eq!(load_between(&before, &after, 9.0).unwrap().others, 0.0);
        assert!(load_between(&after, &after, 0.0).is_none());
        assert!(describe(&l).is_some_and(|n| n.contains("25.0 %") && n.contains("12.5 %")));
        assert!(describe(&NodeLoad { processors: 2, others: 0.05, steal: 0.01 }).is_none());
    }

    #[test]
    fn a_single_run_on_shared_processors_is_noted_and_no_other() {
        let mut m = RunMeta {
            meta_version: 1,
            command: vec!["app".into()],
            ranks: 4,
            hosts: vec!["h".into(); 4],
            mpi: "openmpi".into(),
            mpi_version: String::new(),
            start_unix_s: 0.0,
            wall_s: 1.0,
            exit_code: 0,
            instructions: false,
            cpu_time: true,
            time_only: false,
            mpiskel_version: String::new(),
            node_load: Some(NodeLoad { processors: 2, others: 0.0, steal: 0.0 }),
            runs_app_s: Vec::new(),
            kept_run: None,
        };
        assert!(describe_single_run(&m).is_some_and(|n| n.contains("4 ranks on 2 processors")));
        // Several runs, a rank per processor, a run's time only, or no load known: nothing.
        m.runs_app_s = vec![1.0, 1.2, 1.1];
        assert!(describe_single_run(&m).is_none());
        m.runs_app_s.clear();
        m.node_load = Some(NodeLoad { processors: 4, others: 0.0, steal: 0.0 });
        assert!(describe_single_run(&m).is_none());
        m.node_load = Some(NodeLoad { processors: 2, others: 0.0, steal: 0.0 });
        m.time_only = true;
        assert!(describe_single_run(&m).is_none());
        m.time_only = false;
        m.node_load = None;
        assert!(describe_single_run(&m).is_none());
        // A run of 10 s whose ranks spent 6 s between MPI_Init and MPI_Finalize is noted; one
        // of 9.5 s (the launcher's half second and a little more) is not.
        m.wall_s = 10.0;
        assert!(describe_outside_mpi(&m, 6.0).is_some_and(|n| n.contains("4.000 s before")));
        assert!(describe_outside_mpi(&m, 9.5).is_none());
        m.time_only = true;
        assert!(describe_outside_mpi(&m, 6.0).is_none());
    }
}
