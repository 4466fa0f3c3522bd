//! What `mpiskel validate` sets up on this machine to make it look like another one, what
//! `trace` and `build` write under temporary names, and the guarantee that all of it goes away
//! again.
//!
//! - [`TempPath`]: a folder being written under a temporary name (a trace being recorded, a
//!   skeleton folder being written), removed unless it was renamed into place.
//! - [`status_of_child`]: a launcher (`mpirun`) stopped with SIGTERM on interruption.
//! - [`Netns`]: a network namespace with its loopback up and, optionally, a token-bucket filter
//!   (`tc qdisc … tbf`) limiting its bandwidth; MPI runs inside it talk TCP over that loopback.
//! - [`Cgroup`]: a CPU cgroup with a quota (`cpu.cfs_quota_us` over a 100 ms period, or
//!   `cpu.max` on cgroup v2): processes started in it share that much processor time.
//! - [`run_group`]: a command in a process group of its own, killed as a group on timeout.
//!
//! Every namespace, cgroup and process group is entered in one registry *before* it is created
//! and removed from it after it is gone. Dropping a guard removes its resource; SIGINT, SIGTERM
//! and SIGHUP (after [`install_signal_handler`]) remove everything still registered and exit
//! with 128 + the signal number. Resources get names with the process id in them
//! (`mpiskel-<pid>-<n>`), so that concurrent harnesses do not meet.

use std::ffi::OsString;
use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{bail, ensure, Context, Result};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Something the harness created.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resource {
    Netns(String),
    Cgroup(PathBuf),
    Group(i32),
    /// A file or folder being written under a temporary name.
    Temp(PathBuf),
    /// A child in this process's group (a launcher that stops its own processes on SIGTERM).
    Child(i32),
}

#[derive(Debug, Default)]
struct Registry {
    live: Vec<Resource>,
    /// Set once a signal has started the clean-up: nothing new may start.
    closing: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { live: Vec::new(), closing: false });
static SERIAL: AtomicU32 = AtomicU32::new(0);

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh name for a resource of this process.
fn fresh_name() -> String {
    format!("mpiskel-{}-{}", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed))
}

/// Registers `r` and creates it with `make`, holding the registry so that a signal's clean-up
/// waits until the resource exists. On failure, what was made of it is removed.
fn created(r: Resource, make: impl FnOnce() -> Result<()>) -> Result<()> {
    let result = {
        let mut reg = registry();
        if reg.closing {
            bail!("interrupted");
        }
        reg.live.push(r.clone());
        make()
    };
    if result.is_err() {
        remove(&r);
        unregister(&r);
    }
    result
}

fn unregister(r: &Resource) {
    registry().live.retain(|x| x != r);
}

/// Removes one resource (best effort: what is already gone is fine).
fn remove(r: &Resource) {
    match r {
        Resource::Child(pid) => {
            let pid = Pid::from_raw(*pid);
            let _ = nix::sys::signal::kill(pid, Signal::SIGTERM);
            // Give the launcher time to stop what it started, then make sure.
            for _ in 0..250 {
                match nix::sys::wait::waitpid(pid, Some(nix::sys::wait::WaitPidFlag::WNOHANG)) {
                    Ok(nix::sys::wait::WaitStatus::StillAlive) => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    _ => return,
                }
            }
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        }
        Resource::Temp(path) => {
            if path.is_dir() {
                let _ = std::fs::remove_dir_all(path);
            } else {
                let _ = std::fs::remove_file(path);
            }
        }
        Resource::Group(pgid) => {
            let _ = killpg(Pid::from_raw(*pgid), Signal::SIGKILL);
        }
        Resource::Netns(name) => {
            // Processes still inside keep the namespace's network alive: kill them first.
            if let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    if let Ok(p) = pid.parse::<i32>() {
                        let _ = nix::sys::signal::kill(Pid::from_raw(p), Signal::SIGKILL);
                    }
                }
            }
            let _ = quiet(Command::new("ip").args(["netns", "delete", name]));
        }
        Resource::Cgroup(path) => {
            for _ in 0..50 {
                let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
                let pids: Vec<i32> =
                    procs.split_whitespace().filter_map(|p| p.parse().ok()).collect();
                for p in &pids {
                    let _ = nix::sys::signal::kill(Pid::from_raw(*p), Signal::SIGKILL);
                }
                if std::fs::remove_dir(path).is_ok() || !path.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Removes everything still registered, processes first.
pub fn cleanup_all() {
    let mut reg = registry();
    reg.closing = true;
    let mut live = std::mem::take(&mut reg.live);
    live.sort_by_key(|r| !matches!(r, Resource::Group(_)));
    for r in &live {
        remove(r);
    }
}

/// A file or folder written under a temporary name: removed when the guard is dropped, or by a
/// signal's clean-up, unless [`TempPath::keep`] says it has been renamed into place (or moved
/// aside on purpose).
#[derive(Debug)]
pub struct TempPath {
    r: Resource,
}

impl TempPath {
    /// Registers `path`, before it is created.
    pub fn register(path: &Path) -> Result<TempPath> {
        let r = Resource::Temp(path.to_path_buf());
        created(r.clone(), || Ok(()))?;
        Ok(TempPath { r })
    }

    /// The path is no longer temporary: nothing will remove it.
    pub fn keep(self) {
        unregister(&self.r);
        std::mem::forget(self);
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        remove(&self.r);
        unregister(&self.r);
    }
}

/// Starts `cmd` and registers it as `resource(pid)`, holding the registry so that a signal's
/// clean-up either sees the process or stops it from starting.
fn spawn_registered(
    cmd: &mut Command,
    what: &str,
    resource: fn(i32) -> Resource,
) -> Result<(std::process::Child, Resource)> {
    let mut reg = registry();
    if reg.closing {
        bail!("interrupted");
    }
    let child = cmd.spawn().with_context(|| format!("starting {what}"))?;
    let r = resource(child.id() as i32);
    reg.live.push(r.clone());
    Ok((child, r))
}

/// Starts `cmd` (in this process's group, so that it keeps the terminal), registered so that a
/// signal's clean-up stops it (SIGTERM, then SIGKILL after 5 s), and waits for it.
pub fn status_of_child(mut cmd: Command, what: &str) -> Result<ExitStatus> {
    let (mut child, me) = spawn_registered(&mut cmd, what, Resource::Child)?;
    let status = child.wait().with_context(|| format!("waiting for {what}"));
    wait_if_stopping();
    unregister(&me);
    status
}

/// Set once a signal's clean-up has begun.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A child that ended because a signal's clean-up stopped it is no failure of the work: the
/// caller must not report one (and exit 1) before the clean-up exits with 128 + the signal.
/// Waits here for that exit.
fn wait_if_stopping() {
    while STOPPING.load(Ordering::SeqCst) {
        std::thread::park_timeout(std::time::Duration::from_secs(1));
    }
}

/// Like [`status_of_child`], capturing the child's output (a compiler's messages).
pub fn output_of_child(mut cmd: Command, what: &str) -> Result<std::process::Output> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(Stdio::null());
    let (child, me) = spawn_registered(&mut cmd, what, Resource::Child)?;
    let out = child.wait_with_output().with_context(|| format!("waiting for {what}"));
    wait_if_stopping();
    unregister(&me);
    out
}

/// Cleans up and exits on SIGINT, SIGTERM and SIGHUP (installed once per process).
pub fn install_signal_handler() -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    static INSTALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("installing the signal handler")?;
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            STOPPING.store(true, Ordering::SeqCst);
            eprintln!("mpiskel: signal {sig}: stopping, and removing what was being made");
            cleanup_all();
            std::process::exit(128 + sig);
        }
    });
    Ok(())
}

fn quiet(cmd: &mut Command) -> Result<()> {
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// Whether this process may create namespaces and cgroups.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A network namespace with loopback up, optionally rate-limited.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates the namespace; `rate` (tc syntax, e.g. `100mbit`) adds a token-bucket filter on
    /// its loopback with a burst of `rate`/100 (at least 64 KiB) and 200 ms of queue.
    pub fn create(rate: Option<&str>) -> Result<Self> {
        let burst = match rate {
            Some(r) => (rate_bits(r)? / 8 / 100).max(65536),
            None => 0,
        };
        let ns = Netns { name: fresh_name() };
        created(Resource::Netns(ns.name.clone()), || {
            quiet(Command::new("ip").args(["netns", "add", &ns.name]))
                .context("creating a network namespace (needs root and iproute2)")?;
            quiet(Command::new("ip").args(["-n", &ns.name, "link", "set", "lo", "up"]))?;
            if let Some(rate) = rate {
                quiet(
                    Command::new("ip")
                        .args(["netns", "exec", &ns.name, "tc", "qdisc", "add"])
                        .args([
                            "dev",
                            "lo",
                            "root",
                            "tbf",
                            "rate",
                            rate,
                            "burst",
                            &burst.to_string(),
                            "latency",
                            "200ms",
                        ]),
                )
                .context("adding the tbf qdisc (needs tc from iproute2)")?;
            }
            Ok(())
        })?;
        Ok(ns)
    }

    /// The words that run a command inside the namespace.
    pub fn prefix(&self) -> Vec<OsString> {
        ["ip", "netns", "exec", &self.name].iter().map(OsString::from).collect()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let r = Resource::Netns(self.name.clone());
        remove(&r);
        unregister(&r);
    }
}

/// Bits per second of a tc rate such as `100mbit`, `1gbit`, `500kbit`.
pub fn rate_bits(rate: &str) -> Result<u64> {
    let r = rate.to_ascii_lowercase();
    let (num, mult) = if let Some(n) = r.strip_suffix("gbit") {
        (n, 1_000_000_000)
    } else if let Some(n) = r.strip_suffix("mbit") {
        (n, 1_000_000)
    } else if let Some(n) = r.strip_suffix("kbit") {
        (n, 1_000)
    } else {
        bail!("rate {rate:?}: expected a number with kbit, mbit or gbit");
    };
    let v: f64 = num.parse().with_context(|| format!("rate {rate:?}"))?;
    ensure!(v > 0.0 && v.is_finite(), "rate {rate:?} must be positive");
    Ok((v * mult as f64) as u64)
}

/// A CPU cgroup with a quota.
#[derive(Debug)]
pub struct Cgroup {
    path: PathBuf,
}

/// Where the CPU controller is mounted: (folder, cgroup v2?).
fn cpu_controller() -> Result<(PathBuf, bool)> {
    let v1 = Path::new("/sys/fs/cgroup/cpu");
    if v1.join("cpu.cfs_quota_us").exists() {
        return Ok((v1.to_path_buf(), false));
    }
    let v2 = Path::new("/sys/fs/cgroup");
    let controllers = std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
    if controllers.split_whitespace().any(|c| c == "cpu") {
        return Ok((v2.to_path_buf(), true));
    }
    bail!("no CPU cgroup controller (looked for /sys/fs/cgroup/cpu and cgroup v2's cpu)")
}

impl Cgroup {
    /// A cgroup allowed `percent` % of one processor (200 = two processors).
    pub fn create(percent: u32) -> Result<Self> {
        ensure!(percent > 0, "a CPU quota must be positive");
        let (root, v2) = cpu_controller()?;
        let cg = Cgroup { path: root.join(fresh_name()) };
        created(Resource::Cgroup(cg.path.clone()), || {
            std::fs::create_dir(&cg.path)
                .with_context(|| format!("creating {} (needs root)", cg.path.display()))?;
            let quota = u64::from(percent) * 1000;
            let write = |file: &str, value: String| {
                std::fs::write(cg.path.join(file), &value)
                    .with_context(|| format!("writing {value} to {}", cg.path.join(file).display()))
            };
            if v2 {
                write("cpu.max", format!("{quota} 100000"))
            } else {
                write("cpu.cfs_period_us", "100000".into())?;
                write("cpu.cfs_quota_us", quota.to_string())
            }
        })?;
        Ok(cg)
    }

    /// The words that run a command inside the cgroup (the shell enters it, then becomes the
    /// command; everything the command starts stays inside).
    pub fn prefix(&self) -> Vec<OsString> {
        let procs = self.path.join("cgroup.procs");
        vec![
            "sh".into(),
            "-c".into(),
            format!("echo $$ > '{}' && exec \"$@\"", procs.display()).into(),
            "sh".into(),
        ]
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let r = Resource::Cgroup(self.path.clone());
        remove(&r);
        unregister(&r);
    }
}

/// What a finished command printed.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` in a process group of its own, registered for clean-up; kills the whole group
/// when `timeout` passes.
pub fn run_group(mut cmd: Command, timeout: Duration, what: &str) -> Result<Output> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(Stdio::null()).process_group(0);
    let (mut child, group) = spawn_registered(&mut cmd, what, Resource::Group)?;
    let mut so = child.stdout.take().context("stdout")?;
    let mut se = child.stderr.take().context("stderr")?;
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        so.read_to_string(&mut s).ok();
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        se.read_to_string(&mut s).ok();
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if start.elapsed() > timeout {
            remove(&group);
            child.wait().ok();
            unregister(&group);
            bail!("{what} did not finish within {} s; killed", timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    wait_if_stopping();
    // Whatever the command left behind in its group goes with it.
    remove(&group);
    unregister(&group);
    let (stdout, stderr) = (out_t.join().unwrap_or_default(), err_t.join().unwrap_or_default());
    Ok(Output { status, stdout, stderr })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_read_in_bits_per_second() {
        assert_eq!(rate_bits("100mbit").unwrap(), 100_000_000);
        assert_eq!(rate_bits("1.5Gbit").unwrap(), 1_500_000_000);
        assert_eq!(rate_bits("500kbit").unwrap(), 500_000);
        assert!(rate_bits("fast").is_err());
        assert!(rate_bits("0mbit").is_err());
    }

    #[test]
    fn a_timed_out_group_is_killed_with_its_children() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30"]);
        let t = Instant::now();
        let err = run_group(cmd, Duration::from_millis(300), "sleepers").unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(registry().live.is_empty());
    }
}
