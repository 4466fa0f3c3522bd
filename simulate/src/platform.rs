//! Platforms: hosts (speed, cores), the links between them (bandwidth, latency, sharing) and the
//! route a message takes, read from the subset of SimGrid's platform files that describes a
//! cluster, or from a small TOML file of mpiskel's own; and where each rank runs (a hostfile).
//!
//! A SimGrid `<cluster>` (Casanova et al. 2014, the "cluster" zone) gives every host a private
//! link into a non-blocking crossbar, optionally through a backbone: a message from host `a` to
//! host `b` crosses `a`'s link (its up half, where the sharing policy is `SPLITDUPLEX`), the
//! backbone if there is one, and `b`'s link (its down half). Two ranks of one host talk through
//! that host's loopback link. This is all the NPB platforms of the fixtures use.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, SimulateError};
use crate::model::{Model, Piecewise};

/// How a link shares its bandwidth among the flows that cross it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharing {
    /// The flows share the bandwidth (max-min fairness).
    Shared,
    /// Every flow gets the whole bandwidth (a crossbar, a loopback).
    Fatpipe,
}

/// One link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Its name, as SimGrid would print it.
    pub name: String,
    /// Bytes per second.
    pub bandwidth: f64,
    /// Seconds.
    pub latency: f64,
    /// How flows share it.
    pub sharing: Sharing,
}

/// One host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Its name (what a hostfile names).
    pub name: String,
    /// Flop/s of one core.
    pub speed: f64,
    /// Cores.
    pub cores: u32,
}

/// How one host is attached: the link its messages leave by, the one they arrive by (the same
/// link where it is shared both ways), and its loopback.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Attachment {
    up: usize,
    down: usize,
    loopback: usize,
}

/// A modelled platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Platform {
    /// A name for reports (the cluster's id, or the file's stem).
    pub name: String,
    /// The hosts, in the order SimGrid numbers them.
    pub hosts: Vec<Host>,
    /// Every link.
    pub links: Vec<Link>,
    attach: Vec<Attachment>,
    backbone: Option<usize>,
    /// The model the platform file asks for (its TOML `[model]` section, over SimGrid's SMPI
    /// defaults); `None` where it names none.
    pub model: Option<Model>,
}

/// SimGrid's loopback where a cluster names none (`network/loopback-bw`, `-lat`).
const DEFAULT_LOOPBACK: (f64, f64) = (10e9, 0.0);

/// A cluster as described by its parameters (what both file formats reduce to).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSpec {
    /// Name for reports.
    pub name: String,
    /// Host names, in order.
    pub host_names: Vec<String>,
    /// Flop/s of one core.
    pub speed: f64,
    /// Cores per host.
    pub cores: u32,
    /// Each private link's bandwidth, bytes/s.
    pub bandwidth: f64,
    /// Each private link's latency, seconds.
    pub latency: f64,
    /// Whether a private link's two directions are separate links (`SPLITDUPLEX`).
    pub split_duplex: bool,
    /// Whether a private link gives every flow its whole bandwidth (`FATPIPE`).
    pub fatpipe: bool,
    /// Backbone bandwidth and latency, and whether it is a fat pipe.
    pub backbone: Option<(f64, f64, bool)>,
    /// Loopback bandwidth and latency.
    pub loopback: (f64, f64),
}

impl Platform {
    /// The platform a cluster's parameters describe.
    pub fn cluster(spec: &ClusterSpec) -> Platform {
        let mut links = Vec::new();
        let mut attach = Vec::new();
        let private = if spec.fatpipe { Sharing::Fatpipe } else { Sharing::Shared };
        let push = |links: &mut Vec<Link>, name: String, bw: f64, lat: f64, s: Sharing| {
            links.push(Link { name, bandwidth: bw, latency: lat, sharing: s });
            links.len() - 1
        };
        for h in &spec.host_names {
            let (up, down) = if spec.split_duplex {
                let up = push(&mut links, format!("{h}_UP"), spec.bandwidth, spec.latency, private);
                let down =
                    push(&mut links, format!("{h}_DOWN"), spec.bandwidth, spec.latency, private);
                (up, down)
            } else {
                let l = push(&mut links, h.clone(), spec.bandwidth, spec.latency, private);
                (l, l)
            };
            let (lbw, llat) = spec.loopback;
            let loopback = push(&mut links, format!("{h}_loopback"), lbw, llat, Sharing::Fatpipe);
            attach.push(Attachment { up, down, loopback });
        }
        let backbone = spec.backbone.map(|(bw, lat, fat)| {
            let s = if fat { Sharing::Fatpipe } else { Sharing::Shared };
            push(&mut links, format!("{}_backbone", spec.name), bw, lat, s)
        });
        let hosts = spec
            .host_names
            .iter()
            .map(|n| Host { name: n.clone(), speed: spec.speed, cores: spec.cores })
            .collect();
        Platform { name: spec.name.clone(), hosts, links, attach, backbone, model: None }
    }

    /// Reads a platform file, SimGrid XML or mpiskel TOML, told by its content.
    pub fn open(path: &Path) -> Result<Platform> {
        let text = std::fs::read_to_string(path).map_err(|e| SimulateError::io(path, e))?;
        if text.trim_start().starts_with('<') {
            return Ok(Platform::cluster(&parse_simgrid_xml(path, &text)?));
        }
        let (spec, model) = parse_toml(path, &text)?;
        let mut p = Platform::cluster(&spec);
        p.model = model;
        Ok(p)
    }

    /// The links a message from host `src` to host `dst` crosses, in order.
    pub fn route(&self, src: usize, dst: usize) -> Route {
        if src == dst {
            return Route { links: [self.attach[src].loopback, 0, 0], len: 1 };
        }
        match self.backbone {
            Some(b) => Route { links: [self.attach[src].up, b, self.attach[dst].down], len: 3 },
            None => Route { links: [self.attach[src].up, self.attach[dst].down, 0], len: 2 },
        }
    }

    /// The index of the host named `name`.
    pub fn host_index(&self, name: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.name == name)
    }

    /// Every link between hosts (not the loopbacks) set to `bandwidth` bytes/s.
    pub fn set_bandwidth(&mut self, bandwidth: f64) {
        self.links_between_hosts().for_each(|l| l.bandwidth = bandwidth);
    }

    /// Every link between hosts (not the loopbacks) set to `latency` seconds.
    pub fn set_latency(&mut self, latency: f64) {
        self.links_between_hosts().for_each(|l| l.latency = latency);
    }

    /// Every host's cores set to `speed` flop/s.
    pub fn set_speed(&mut self, speed: f64) {
        for h in &mut self.hosts {
            h.speed = speed;
        }
    }

    /// Every link between hosts (not the loopbacks) at `factor` times its bandwidth.
    pub fn scale_bandwidth(&mut self, factor: f64) {
        self.links_between_hosts().for_each(|l| l.bandwidth *= factor);
    }

    /// Every link between hosts (not the loopbacks) at `factor` times its latency.
    pub fn scale_latency(&mut self, factor: f64) {
        self.links_between_hosts().for_each(|l| l.latency *= factor);
    }

    /// The links between hosts: every link but the hosts' loopbacks. O(links).
    fn links_between_hosts(&mut self) -> impl Iterator<Item = &mut Link> {
        let mut loopback = vec![false; self.links.len()];
        for a in &self.attach {
            loopback[a.loopback] = true;
        }
        self.links.iter_mut().zip(loopback).filter(|(_, lo)| !lo).map(|(l, _)| l)
    }

    /// Every host's cores at `factor` times their speed.
    pub fn scale_speed(&mut self, factor: f64) {
        for h in &mut self.hosts {
            h.speed *= factor;
        }
    }
}

/// The links of one route (at most three in a cluster).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    links: [usize; 3],
    len: usize,
}

impl Route {
    /// The links, in order.
    pub fn links(&self) -> &[usize] {
        &self.links[..self.len]
    }
}

fn bad(path: &Path, what: String) -> SimulateError {
    SimulateError::Platform { path: path.to_path_buf(), what }
}

/// The `<cluster>` of a SimGrid platform file (version 4.x).
fn parse_simgrid_xml(path: &Path, text: &str) -> Result<ClusterSpec> {
    let doc = roxmltree::Document::parse_with_options(
        text,
        roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() },
    )
    .map_err(|e| bad(path, format!("not well-formed XML: {e}")))?;
    let root = doc.root_element();
    if root.tag_name().name() != "platform" {
        return Err(bad(
            path,
            format!("root element <{}>, not <platform>", root.tag_name().name()),
        ));
    }
    let clusters: Vec<_> = root.descendants().filter(|n| n.has_tag_name("cluster")).collect();
    let unsupported: Vec<&str> = root
        .descendants()
        .filter(|n| n.is_element())
        .map(|n| n.tag_name().name())
        .filter(|t| !matches!(*t, "platform" | "cluster" | "prop" | "config" | "zone" | "AS"))
        .collect();
    if let Some(t) = unsupported.first() {
        return Err(bad(
            path,
            format!(
                "element <{t}> (line {}): only clusters (<cluster>) are modelled",
                line_of(text, &doc, t)
            ),
        ));
    }
    let [c] = clusters[..] else {
        return Err(bad(
            path,
            format!("{} <cluster> elements; exactly one is modelled", clusters.len()),
        ));
    };
    let pos = doc.text_pos_at(c.range().start);
    let at = |what: &str| format!("<cluster> at line {}: {what}", pos.row);
    let attr = |name: &str| c.attribute(name);
    let need = |name: &str| attr(name).ok_or_else(|| bad(path, at(&format!("no {name}=\"…\""))));
    let id = attr("id").unwrap_or("cluster").to_string();
    if let Some(t) = attr("topology") {
        if t != "FLAT" {
            return Err(bad(
                path,
                at(&format!("topology=\"{t}\": only FLAT clusters are modelled")),
            ));
        }
    }
    let radical = need("radical")?;
    let numbers = parse_radical(radical).map_err(|e| bad(path, at(&e)))?;
    let (prefix, suffix) = (attr("prefix").unwrap_or(""), attr("suffix").unwrap_or(""));
    let host_names = numbers.iter().map(|n| format!("{prefix}{n}{suffix}")).collect();
    let unit = |name: &str, kind: Unit| -> Result<f64> {
        let v = need(name)?;
        parse_unit(v, kind).map_err(|e| bad(path, at(&format!("{name}=\"{v}\": {e}"))))
    };
    let opt_unit = |name: &str, kind: Unit| -> Result<Option<f64>> {
        attr(name)
            .map(|v| {
                parse_unit(v, kind).map_err(|e| bad(path, at(&format!("{name}=\"{v}\": {e}"))))
            })
            .transpose()
    };
    let policy = attr("sharing_policy").unwrap_or("SHARED");
    let (split_duplex, fatpipe) = match policy {
        "SHARED" => (false, false),
        "SPLITDUPLEX" => (true, false),
        "FATPIPE" => (false, true),
        p => return Err(bad(path, at(&format!("sharing_policy=\"{p}\" is not modelled")))),
    };
    let backbone = match (opt_unit("bb_bw", Unit::Bandwidth)?, opt_unit("bb_lat", Unit::Time)?) {
        (Some(bw), lat) => {
            Some((bw, lat.unwrap_or(0.0), attr("bb_sharing_policy") == Some("FATPIPE")))
        }
        (None, _) => None,
    };
    let loopback = match opt_unit("loopback_bw", Unit::Bandwidth)? {
        Some(bw) => (bw, opt_unit("loopback_lat", Unit::Time)?.unwrap_or(0.0)),
        None => DEFAULT_LOOPBACK,
    };
    let cores = match attr("core") {
        None => 1,
        Some(v) => {
            v.trim().parse().map_err(|_| bad(path, at(&format!("core=\"{v}\" is not a count"))))?
        }
    };
    Ok(ClusterSpec {
        name: id,
        host_names,
        speed: unit("speed", Unit::Speed)?,
        cores,
        bandwidth: unit("bw", Unit::Bandwidth)?,
        latency: unit("lat", Unit::Time)?,
        split_duplex,
        fatpipe,
        backbone,
        loopback,
    })
}

fn line_of(text: &str, doc: &roxmltree::Document, tag: &str) -> u32 {
    doc.descendants()
        .find(|n| n.has_tag_name(tag))
        .map(|n| doc.text_pos_at(n.range().start).row)
        .unwrap_or_else(|| text.lines().count() as u32)
}

/// `0-15`, `0-3,8,10-11` → the numbers, in order.
fn parse_radical(r: &str) -> std::result::Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for part in r.split(',') {
        let part = part.trim();
        let num = |s: &str| {
            s.trim().parse::<u64>().map_err(|_| format!("radical \"{r}\": \"{s}\" is not a number"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if b < a || b - a > 10_000_000 {
                    return Err(format!("radical \"{r}\": range {a}-{b}"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    if out.is_empty() {
        return Err(format!("radical \"{r}\" names no host"));
    }
    Ok(out)
}

/// What a quantity measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Flop/s (`1Gf`).
    Speed,
    /// Bytes/s (`10Gbps` is bits, `5MBps` bytes).
    Bandwidth,
    /// Seconds (`1us`).
    Time,
}

/// Parses a SimGrid quantity: a number and a unit (`1Gf`, `10Gbps`, `5MBps`, `0.1us`).
pub fn parse_unit(s: &str, kind: Unit) -> std::result::Result<f64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(s.len());
    // "1e9" is a number; "1Gf" splits at G; an 'e' followed by a letter is a unit start.
    let (mut num, mut unit) = s.split_at(split);
    if let Some(i) = num.rfind(['e', 'E']) {
        if !num[i + 1..].starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') {
            (num, unit) = s.split_at(i);
        }
    }
    let v: f64 = num.parse().map_err(|_| format!("\"{num}\" is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{v} is not a non-negative quantity"));
    }
    let prefix = |p: &str| -> Option<f64> {
        Some(match p {
            "" => 1.0,
            "k" | "K" => 1e3,
            "M" => 1e6,
            "G" => 1e9,
            "T" => 1e12,
            "P" => 1e15,
            "Ki" => 1024.0,
            "Mi" => 1024.0 * 1024.0,
            "Gi" => 1024.0 * 1024.0 * 1024.0,
            "Ti" => 1024f64.powi(4),
            _ => return None,
        })
    };
    let mult = match kind {
        Unit::Speed => {
            let p = unit.strip_suffix("flops").or_else(|| unit.strip_suffix('f'));
            match p {
                Some(p) => prefix(p),
                None if unit.is_empty() => Some(1.0),
                None => None,
            }
        }
        Unit::Bandwidth => {
            if let Some(p) = unit.strip_suffix("Bps") {
                prefix(p)
            } else if let Some(p) = unit.strip_suffix("bps") {
                prefix(p).map(|m| m / 8.0)
            } else if unit.is_empty() {
                Some(1.0)
            } else {
                None
            }
        }
        Unit::Time => match unit {
            "" | "s" => Some(1.0),
            "ms" => Some(-1e3),
            "us" => Some(-1e6),
            "ns" => Some(-1e9),
            "ps" => Some(-1e12),
            "m" => Some(60.0),
            "h" => Some(3600.0),
            _ => None,
        },
    };
    let what = match kind {
        Unit::Speed => "a speed (f, kf, Mf, Gf, Tf)",
        Unit::Bandwidth => "a bandwidth (Bps, kBps, MBps, GBps or bps, kbps, Mbps, Gbps)",
        Unit::Time => "a time (s, ms, us, ns)",
    };
    // Negative multipliers divide (exactly rounded: 10us is 1e-5, not 9.999…e-6).
    mult.map(|m| if m < 0.0 { v / -m } else { v * m })
        .ok_or_else(|| format!("unit \"{unit}\" is not {what}"))
}

/// mpiskel's own platform file:
///
/// ```toml
/// [cluster]
/// hosts = 16                 # or names = ["a", "b", …]
/// speed = "1Gf"
/// cores = 1
/// bandwidth = "10Gbps"
/// latency = "1us"
/// sharing = "splitduplex"    # shared | splitduplex | fatpipe
/// loopback_bandwidth = "100Gbps"
/// loopback_latency = "0.1us"
/// # backbone_bandwidth = "40Gbps"; backbone_latency = "1us"
///
/// [model]                    # optional: over SimGrid's SMPI defaults
/// bandwidth_factor = "0:0.81;1426:0.61;65472:0.94"   # size above which : factor
/// latency_factor = "1"
/// eager_threshold = 65536
/// crosstraffic = 0.05
/// ```
fn parse_toml(path: &Path, text: &str) -> Result<(ClusterSpec, Option<Model>)> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        cluster: Cluster,
        model: Option<ModelSection>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ModelSection {
        bandwidth_factor: Option<String>,
        latency_factor: Option<String>,
        eager_threshold: Option<u64>,
        envelope: Option<u64>,
        crosstraffic: Option<f64>,
        weight_s: Option<f64>,
        tcp_gamma: Option<f64>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Cluster {
        name: Option<String>,
        hosts: Option<u32>,
        names: Option<Vec<String>>,
        speed: String,
        #[serde(default = "one")]
        cores: u32,
        bandwidth: String,
        latency: String,
        sharing: Option<String>,
        loopback_bandwidth: Option<String>,
        loopback_latency: Option<String>,
        backbone_bandwidth: Option<String>,
        backbone_latency: Option<String>,
    }
    fn one() -> u32 {
        1
    }
    let f: File =
        toml::from_str(text).map_err(|e| bad(path, format!("not a platform file: {e}")))?;
    let c = f.cluster;
    let u = |v: &str, k: Unit, name: &str| {
        parse_unit(v, k).map_err(|e| bad(path, format!("cluster.{name} = \"{v}\": {e}")))
    };
    let host_names = match (c.hosts, c.names) {
        (_, Some(n)) if !n.is_empty() => n,
        (Some(n), None) if n > 0 => (0..n).map(|i| format!("node-{i}")).collect(),
        _ => return Err(bad(path, "cluster: give hosts = N (N > 0) or names = [...]".into())),
    };
    let (split_duplex, fatpipe) = match c.sharing.as_deref().unwrap_or("shared") {
        "shared" => (false, false),
        "splitduplex" => (true, false),
        "fatpipe" => (false, true),
        s => {
            return Err(bad(
                path,
                format!("cluster.sharing = \"{s}\": shared, splitduplex or fatpipe"),
            ))
        }
    };
    let loopback = match &c.loopback_bandwidth {
        Some(bw) => (
            u(bw, Unit::Bandwidth, "loopback_bandwidth")?,
            c.loopback_latency
                .as_deref()
                .map(|l| u(l, Unit::Time, "loopback_latency"))
                .transpose()?
                .unwrap_or(0.0),
        ),
        None => DEFAULT_LOOPBACK,
    };
    let backbone = match &c.backbone_bandwidth {
        Some(bw) => Some((
            u(bw, Unit::Bandwidth, "backbone_bandwidth")?,
            c.backbone_latency
                .as_deref()
                .map(|l| u(l, Unit::Time, "backbone_latency"))
                .transpose()?
                .unwrap_or(0.0),
            false,
        )),
        None => None,
    };
    if c.cores == 0 {
        return Err(bad(path, "cluster.cores = 0".into()));
    }
    let model = match f.model {
        None => None,
        Some(m) => {
            let mut model = Model::smpi();
            let pw = |name: &str, v: &str| {
                Piecewise::parse(name, v).map_err(|e| bad(path, format!("model.{name}: {e}")))
            };
            if let Some(v) = &m.bandwidth_factor {
                model.bandwidth_factor = pw("bandwidth_factor", v)?;
            }
            if let Some(v) = &m.latency_factor {
                model.latency_factor = pw("latency_factor", v)?;
            }
            let nonneg = |name: &str, v: f64| {
                if v >= 0.0 && v.is_finite() {
                    Ok(v)
                } else {
                    Err(bad(path, format!("model.{name} = {v}: must be a number ≥ 0")))
                }
            };
            model.eager_threshold = m.eager_threshold.unwrap_or(model.eager_threshold);
            model.envelope = m.envelope.unwrap_or(model.envelope);
            model.crosstraffic =
                nonneg("crosstraffic", m.crosstraffic.unwrap_or(model.crosstraffic))?;
            model.weight_s = nonneg("weight_s", m.weight_s.unwrap_or(model.weight_s))?;
            model.tcp_gamma = nonneg("tcp_gamma", m.tcp_gamma.unwrap_or(model.tcp_gamma))?;
            Some(model)
        }
    };
    let spec = ClusterSpec {
        name: c.name.unwrap_or_else(|| {
            path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        }),
        host_names,
        speed: u(&c.speed, Unit::Speed, "speed")?,
        cores: c.cores,
        bandwidth: u(&c.bandwidth, Unit::Bandwidth, "bandwidth")?,
        latency: u(&c.latency, Unit::Time, "latency")?,
        split_duplex,
        fatpipe,
        backbone,
        loopback,
    };
    Ok((spec, model))
}

/// Where each rank runs: rank → host index.
///
/// Without a hostfile, ranks go to the hosts in order, wrapping around (as `smpirun` does). A
/// hostfile (SMPI's format) names one host per line, or `host:N` for N ranks; ranks fill the
/// lines in order and wrap around where there are more ranks than lines.
pub fn placement(platform: &Platform, hostfile: Option<&Path>, ranks: usize) -> Result<Vec<usize>> {
    let slots: Vec<usize> = match hostfile {
        None => (0..platform.hosts.len()).collect(),
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| SimulateError::io(p, e))?;
            let mut slots = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (name, n) = match line.rsplit_once(':') {
                    Some((h, n)) => (h.trim(), n.trim().parse::<usize>().ok()),
                    None => (line, Some(1)),
                };
                let host = platform.host_index(name).ok_or_else(|| SimulateError::Hostfile {
                    path: p.to_path_buf(),
                    line: i + 1,
                    what: format!("host \"{name}\" is not on platform {}", platform.name),
                })?;
                let n = n.filter(|&n| n > 0).ok_or_else(|| SimulateError::Hostfile {
                    path: p.to_path_buf(),
                    line: i + 1,
                    what: format!("\"{line}\": give host or host:N with N > 0"),
                })?;
                slots.extend(std::iter::repeat_n(host, n));
            }
            if slots.is_empty() {
                return Err(SimulateError::Hostfile {
                    path: p.to_path_buf(),
                    line: 0,
                    what: "names no host".into(),
                });
            }
            slots
        }
    };
    if slots.is_empty() {
        return Err(SimulateError::Platform {
            path: platform.name.clone().into(),
            what: "has no host".into(),
        });
    }
    Ok((0..ranks).map(|r| slots[r % slots.len()]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_simgrid_reads_them() {
        assert_eq!(parse_unit("1Gf", Unit::Speed).unwrap(), 1e9);
        assert_eq!(parse_unit("0.5Gf", Unit::Speed).unwrap(), 5e8);
        assert_eq!(parse_unit("10Gbps", Unit::Bandwidth).unwrap(), 1.25e9);
        assert_eq!(parse_unit("5MBps", Unit::Bandwidth).unwrap(), 5e6);
        assert_eq!(parse_unit("1us", Unit::Time).unwrap(), 1e-6);
        assert_eq!(parse_unit("1e9", Unit::Speed).unwrap(), 1e9);
        assert_eq!(parse_unit("2e-6s", Unit::Time).unwrap(), 2e-6);
        assert!(parse_unit("10Gbits", Unit::Bandwidth).unwrap_err().contains("Gbits"));
        assert!(parse_unit("fast", Unit::Speed).is_err());
    }

    #[test]
    fn a_split_duplex_cluster_routes_up_then_down_and_loops_back_on_one_host() {
        let xml = r#"<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="n-" suffix=".x" radical="0-3" speed="1Gf" bw="10Gbps" lat="1us"
           sharing_policy="SPLITDUPLEX" loopback_bw="100Gbps" loopback_lat="0.1us"/>
</platform>"#;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.xml");
        std::fs::write(&p, xml).unwrap();
        let pf = Platform::open(&p).unwrap();
        assert_eq!(pf.hosts.len(), 4);
        assert_eq!(pf.hosts[2].name, "n-2.x");
        let r = pf.route(0, 3);
        let names: Vec<&str> = r.links().iter().map(|&l| pf.links[l].name.as_str()).collect();
        assert_eq!(names, ["n-0.x_UP", "n-3.x_DOWN"]);
        let l = pf.route(1, 1);
        assert_eq!(pf.links[l.links()[0]].sharing, Sharing::Fatpipe);
        assert_eq!(pf.links[l.links()[0]].bandwidth, 12.5e9);
        let hf = dir.path().join("hosts");
        std::fs::write(&hf, "n-0.x\nn-0.x\nn-1.x:2\n").unwrap();
        assert_eq!(placement(&pf, Some(&hf), 6).unwrap(), [0, 0, 1, 1, 0, 0]);
        std::fs::write(&hf, "n-9.x\n").unwrap();
        let e = placement(&pf, Some(&hf), 2).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("n-9.x"), "{e}");
    }

    #[test]
    fn an_unsupported_element_is_named_with_its_line() {
        let xml = "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n<host id=\"a\" speed=\"1Gf\"/>\n</zone>\n</platform>";
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("z.xml");
        std::fs::write(&p, xml).unwrap();
        let e = Platform::open(&p).unwrap_err().to_string();
        assert!(e.contains("<host>") && e.contains("line 3"), "{e}");
    }

    #[test]
    fn the_toml_format_describes_the_same_cluster() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            "[cluster]\nhosts = 2\nspeed = \"2Gf\"\nbandwidth = \"5MBps\"\nlatency = \"10us\"\nsharing = \"splitduplex\"\n",
        )
        .unwrap();
        let pf = Platform::open(&p).unwrap();
        assert_eq!((pf.hosts.len(), pf.hosts[1].speed), (2, 2e9));
        let r = pf.route(1, 0);
        assert_eq!(pf.links[r.links()[0]].name, "node-1_UP");
        assert_eq!(pf.links[r.links()[1]].latency, 10e-6);
        std::fs::write(&p, "[cluster]\nhosts = 2\nspeed = \"2Gf\"\n").unwrap();
        assert!(Platform::open(&p).unwrap_err().to_string().contains("c.toml"));
    }
}
