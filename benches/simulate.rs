//! `mpiskel simulate` against SimGrid's replay of the full trace: every NPB fixture of
//! `../shared/fixtures/npb` in every scenario that has a replay figure (its error, fast-forwarded
//! and exact), and the wall time of both, with SimGrid's replay run again here on the
//! reference platform (`smpirun -replay`, the fixtures' command) to time it.
//!
//! Each trace's skeleton (`mpiskel build`, default target) is simulated too, from its folder
//! alone: its program, with the loops it cuts priced at the pace of a few simulated iterations.
//! Last, a synthetic 3-D halo exchange at `SIM_SCALE_RANKS` ranks (default 16,384; 0 skips it)
//! is simulated from its trace and from its skeleton.
//!
//! Run with `cargo bench --bench simulate`. `SIM_ONLY=bt.S.16,lu.W.16` restricts the traces;
//! `SIM_REPLAY=0` skips timing SimGrid. Prints Markdown tables; VALIDATION.md and BENCHMARKS.md
//! record their results.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn shared() -> PathBuf {
    std::env::var_os("MPISKEL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

/// Scenario → (platform file, ranks per host); `coll_ompi_nb` is SimGrid with Open MPI's
/// collectives and binomial broadcasts (`--collectives ompi` here).
fn scenarios() -> Vec<(&'static str, &'static str, u32)> {
    vec![
        ("ref", "ref.xml", 1),
        ("bw50MBps", "bw50MBps.xml", 1),
        ("bw20MBps", "bw20MBps.xml", 1),
        ("bw5MBps", "bw5MBps.xml", 1),
        ("lat10x", "lat10x.xml", 1),
        ("speedhalf", "speedhalf.xml", 1),
        ("share2", "ref.xml", 2),
        ("share4", "ref.xml", 4),
        ("coll_ompi_nb", "ref.xml", 1),
    ]
}

fn class(s: &str) -> &'static str {
    match s {
        "ref" => "reference",
        s if s.starts_with("bw") => "bandwidth",
        "lat10x" => "latency",
        "speedhalf" => "CPU speed",
        "coll_ompi_nb" => "collectives",
        _ => "shared processors",
    }
}

/// `mpiskel simulate --json`: (predicted s, whole command's wall s, simulation's own s).
fn simulate(
    trace: &Path,
    platform: &Path,
    hostfile: &Path,
    exact: bool,
    ompi: bool,
) -> (f64, f64, f64) {
    let t = Instant::now();
    let mut c = Command::new(env!("CARGO_BIN_EXE_mpiskel"));
    c.arg("simulate").arg(trace).arg("--platform").arg(platform);
    c.arg("--hostfile").arg(hostfile).arg("--json");
    if platform.ends_with("ref.xml") && hostfile.ends_with("hostfile_1perhost.txt") && ompi {
        c.args(["--collectives", "ompi"]);
    }
    if exact {
        c.arg("--exact");
    }
    let o = c.output().expect("mpiskel");
    let wall = t.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}: {}", trace.display(), String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    (j["predicted_s"].as_f64().unwrap(), wall, j["wall_s"].as_f64().unwrap())
}

/// SimGrid's replay of `trace` on the reference platform: its wall time, seconds.
fn replay_wall(trace: &Path, ranks: &str, platforms: &Path) -> Option<f64> {
    let t = Instant::now();
    let o = Command::new("smpirun")
        .current_dir(trace)
        .args(["-np", ranks, "-platform"])
        .arg(platforms.join("ref.xml"))
        .arg("-hostfile")
        .arg(platforms.join("hostfile_1perhost.txt"))
        .args(["--cfg=smpi/host-speed:1Gf", "-replay", "trace.txt"])
        .arg("/usr/lib/x86_64-linux-gnu/simgrid/smpireplaymain")
        .output()
        .ok()?;
    o.status.success().then(|| t.elapsed().as_secs_f64())
}

fn main() {
    let npb = shared().join("fixtures").join("npb");
    let platforms = npb.join("platforms");
    let csv = std::fs::read_to_string(npb.join("ground-truth.csv")).expect("ground-truth.csv");
    let mut truth: BTreeMap<(String, String), f64> = BTreeMap::new();
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.trim_end().split(',').collect();
        if f.len() >= 10 {
            if let Ok(r) = f[9].parse::<f64>() {
                truth.insert((format!("{}.{}.{}", f[0], f[1], f[2]), f[3].to_string()), r);
            }
        }
    }
    let only: Option<Vec<String>> =
        std::env::var("SIM_ONLY").ok().map(|v| v.split(',').map(String::from).collect());
    let time_replay = std::env::var("SIM_REPLAY").map(|v| v != "0").unwrap_or(true);
    let mut traces: Vec<String> = truth.keys().map(|k| k.0.clone()).collect();
    traces.dedup();
    traces.retain(|t| only.as_ref().is_none_or(|o| o.contains(t)));
    let work = std::env::temp_dir().join(format!("mpiskel-bench-simulate-{}", std::process::id()));
    std::fs::create_dir_all(&work).expect("scratch folder");
    println!("| trace | scenario | replay (s) | simulated (s) | error | exact (s) | error | skeleton (s) | error |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut errs: BTreeMap<&str, [Vec<f64>; 3]> = BTreeMap::new();
    let mut speed = Vec::new();
    for t in &traces {
        let skel = work.join(t);
        build(&npb.join(t).join("trace.txt"), &skel);
        for (s, pf, per_host) in scenarios() {
            let Some(&r) = truth.get(&(t.clone(), s.to_string())) else { continue };
            let hf = platforms.join(format!("hostfile_{per_host}perhost.txt"));
            let ompi = s == "coll_ompi_nb";
            let (f, wall, own) = simulate(&npb.join(t), &platforms.join(pf), &hf, false, ompi);
            let (x, xwall, xown) = simulate(&npb.join(t), &platforms.join(pf), &hf, true, ompi);
            let (k, kwall, kown) = simulate(&skel, &platforms.join(pf), &hf, false, ompi);
            let err = |p: f64| (p / r - 1.0) * 100.0;
            let (ef, ex, ek) = (err(f), err(x), err(k));
            println!(
                "| {t} | {s} | {r:.6} | {f:.6} | {ef:+.2} % | {x:.6} | {ex:+.2} % | {k:.6} | {ek:+.2} % |"
            );
            let e = errs.entry(class(s)).or_default();
            e[0].push(ef.abs());
            e[1].push(ex.abs());
            e[2].push(ek.abs());
            if s == "ref" {
                speed.push((t.clone(), wall, own, xwall, xown, kwall, kown));
            }
        }
    }
    println!();
    println!("| class | cases | simulated: mean / max |error| | exact: mean / max |error| | skeleton: mean / max |error| |");
    println!("|---|---|---|---|---|");
    let stats =
        |v: &[f64]| (v.iter().sum::<f64>() / v.len() as f64, v.iter().copied().fold(0.0, f64::max));
    let mut all: [Vec<f64>; 3] = Default::default();
    let row = |c: &str, v: &[Vec<f64>; 3]| {
        let cells: Vec<String> = v
            .iter()
            .map(|x| {
                let (m, mx) = stats(x);
                format!("{m:.2} / {mx:.2} %")
            })
            .collect();
        println!("| {c} | {} | {} |", v[0].len(), cells.join(" | "));
    };
    for (c, v) in &errs {
        row(c, v);
        for k in 0..3 {
            all[k].extend(&v[k]);
        }
    }
    if !all[0].is_empty() {
        row("**all**", &all);
    }
    println!();
    println!("| trace (reference platform) | SimGrid replay (s) | simulate, command (s) | simulation alone (s) | speed-up (command) | exact, command (s) | exact, simulation (s) | skeleton, command (s) | skeleton, simulation (s) | speed-up (skeleton) |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (t, wall, own, xwall, xown, kwall, kown) in speed {
        let ranks = t.rsplit('.').next().unwrap_or("16").to_string();
        let rep = if time_replay { replay_wall(&npb.join(&t), &ranks, &platforms) } else { None };
        let (rs, up, kup) = match rep {
            Some(w) => {
                (format!("{w:.3}"), format!("{:.1}×", w / wall), format!("{:.1}×", w / kwall))
            }
            None => ("–".into(), "–".into(), "–".into()),
        };
        println!(
            "| {t} | {rs} | {wall:.3} | {own:.4} | {up} | {xwall:.3} | {xown:.4} | {kwall:.3} | {kown:.4} | {kup} |"
        );
    }
    let ranks: u32 =
        std::env::var("SIM_SCALE_RANKS").ok().and_then(|v| v.parse().ok()).unwrap_or(16_384);
    if ranks > 0 {
        scale(&work, ranks);
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// `mpiskel build TRACE -o DIR` (default target).
fn build(trace: &Path, dir: &Path) -> f64 {
    let t = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_mpiskel"))
        .arg("build")
        .arg(trace)
        .arg("-o")
        .arg(dir)
        .output()
        .expect("mpiskel build");
    assert!(o.status.success(), "{}: {}", trace.display(), String::from_utf8_lossy(&o.stderr));
    t.elapsed().as_secs_f64()
}

/// A synthetic 3-D halo exchange of 60 steps (an 8-byte `MPI_Allreduce` each) at `ranks` ranks
/// on a cluster of as many 1 Gflop/s hosts with 10 Gb/s, 1 µs links: simulated from its trace
/// and from its skeleton, with `/usr/bin/time`'s peak memory.
fn scale(work: &Path, ranks: u32) {
    let trace = work.join(format!("halo{ranks}"));
    let o = Command::new(env!("CARGO_BIN_EXE_mpiskel"))
        .args(["synth", "--iterations", "60", "--ranks", &ranks.to_string(), "-o"])
        .arg(&trace)
        .output()
        .expect("mpiskel synth");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let platform = work.join("cluster.toml");
    std::fs::write(
        &platform,
        format!(
            "[cluster]\nhosts = {ranks}\nspeed = \"1Gf\"\nbandwidth = \"10Gbps\"\nlatency = \"1us\"\n\
             sharing = \"splitduplex\"\nloopback_bandwidth = \"100Gbps\"\nloopback_latency = \"0.1us\"\n"
        ),
    )
    .expect("platform");
    let skel = work.join(format!("halo{ranks}.skel"));
    let built = build(&trace, &skel);
    println!();
    println!("| {ranks} ranks, 60 steps | simulate (s) | peak (MB) | predicted (s) | messages simulated |");
    println!("|---|---|---|---|---|");
    for (what, input) in [("from the trace", &trace), ("from the skeleton", &skel)] {
        let t = Instant::now();
        let o = Command::new("/usr/bin/time")
            .args(["-f", "%M"])
            .arg(env!("CARGO_BIN_EXE_mpiskel"))
            .arg("simulate")
            .arg(input)
            .arg("--platform")
            .arg(&platform)
            .arg("--json")
            .output()
            .expect("/usr/bin/time (Debian package time)");
        let wall = t.elapsed().as_secs_f64();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let peak_kb: f64 = String::from_utf8_lossy(&o.stderr)
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(f64::NAN);
        println!(
            "| {what} | {wall:.2} | {:.0} | {:.6} | {} |",
            peak_kb / 1024.0,
            j["predicted_s"].as_f64().unwrap(),
            j["messages"]
        );
    }
    println!("(skeleton built in {built:.1} s, once)");
}
