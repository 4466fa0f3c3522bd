//! The performance model: how long a message and a computation take on a [`Platform`].
//!
//! A message of `s` bytes is a flow of `s + envelope` bytes over its route. It first waits the
//! route's latency times a latency factor of its size, then moves at the rate max-min fair
//! sharing gives it on the links it crosses ([`crate::fluid`]), times a bandwidth factor of its
//! size; it loads its route's reverse links with a twentieth of its rate (acknowledgements). Its
//! share on a link is weighted by its route's latency plus `weight_s` over each link's
//! bandwidth, so flows over long, slow routes get less. Sends below the eager threshold return
//! at once; larger ones (and synchronous sends) wait for the transfer. Computations are flows of
//! flops over their host's cores, one core at most each.
//!
//! In LogGOPS terms (Hoefler et al. 2009, LogGOPSim): L is the route's latency times the latency
//! factor, G is one over the bandwidth times the bandwidth factor, S is the eager threshold, and
//! o and g are zero; unlike LogGOPS, the bandwidth is shared among concurrent flows. The
//! defaults are those of SimGrid's SMPI network model (Clauss et al. 2011; SimGrid 3.32), so
//! that a what-if asked of SimGrid and of mpiskel answers the same question.
//!
//! [`Platform`]: crate::platform::Platform

use serde::{Deserialize, Serialize};

use crate::error::{Result, SimulateError};

/// A function of the message size, constant between boundaries (SimGrid's "factor" strings:
/// `65472:0.94;15424:0.70;…`). A size takes the value of the largest boundary below it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Piecewise {
    /// (boundary in bytes, value), sorted by boundary.
    pub steps: Vec<(f64, f64)>,
    /// The value below the first boundary.
    pub default: f64,
}

impl Piecewise {
    /// A constant.
    pub fn constant(v: f64) -> Piecewise {
        Piecewise { steps: vec![], default: v }
    }

    /// Parses `b1:v1;b2:v2;…` (any order) or a single number.
    pub fn parse(name: &str, s: &str) -> Result<Piecewise> {
        let err = |what: String| SimulateError::Model { name: name.into(), what };
        if let Ok(v) = s.trim().parse::<f64>() {
            return Ok(Piecewise::constant(v));
        }
        let mut steps = Vec::new();
        for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (b, v) = part
                .split_once(':')
                .ok_or_else(|| err(format!("\"{part}\" is not boundary:value")))?;
            let b: f64 = b.trim().parse().map_err(|_| err(format!("\"{b}\" is not a size")))?;
            let v: f64 = v.trim().parse().map_err(|_| err(format!("\"{v}\" is not a number")))?;
            if !(b >= 0.0 && v > 0.0 && v.is_finite()) {
                return Err(err(format!("\"{part}\": sizes ≥ 0 and values > 0")));
            }
            steps.push((b, v));
        }
        steps.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(Piecewise { steps, default: 1.0 })
    }

    /// The value at `size` bytes.
    pub fn at(&self, size: f64) -> f64 {
        let mut v = self.default;
        for &(b, x) in &self.steps {
            if size <= b {
                break;
            }
            v = x;
        }
        v
    }
}

/// The model's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Multiplies the bandwidth a flow gets, by message size.
    pub bandwidth_factor: Piecewise,
    /// Multiplies the route's latency, by message size.
    pub latency_factor: Piecewise,
    /// Sends of fewer bytes return at once (MPI's eager protocol); others wait for the
    /// transfer (`smpi/send-is-detached-thresh`).
    pub eager_threshold: u64,
    /// Bytes every message carries beyond its payload (tag, source, communicator).
    pub envelope: u64,
    /// Share of a flow's rate its acknowledgements take on the reverse route.
    pub crosstraffic: f64,
    /// Bytes that weigh a route's links in bandwidth sharing (`network/weight-S`).
    pub weight_s: f64,
    /// TCP window, bytes: a flow moves at most this much per round trip (`network/TCP-gamma`).
    pub tcp_gamma: f64,
}

impl Default for Model {
    fn default() -> Model {
        Model::smpi()
    }
}

impl Model {
    /// SimGrid 3.32's SMPI network model with its default factors.
    pub fn smpi() -> Model {
        Model {
            bandwidth_factor: Piecewise::parse(
                "bandwidth factor",
                "65472:0.940694;15424:0.697866;9376:0.58729;5776:1.08739;3484:0.77493;\
                 1426:0.608902;732:0.341987;257:0.338112;0:0.812084",
            )
            .expect("built-in factors"),
            latency_factor: Piecewise::parse(
                "latency factor",
                "65472:11.6436;15424:3.48845;9376:2.59299;5776:2.18796;3484:1.88101;\
                 1426:1.61075;732:1.9503;257:1.95341;0:2.01467",
            )
            .expect("built-in factors"),
            eager_threshold: 65536,
            envelope: 16,
            crosstraffic: 0.05,
            weight_s: 8775.0,
            tcp_gamma: 4_194_304.0,
        }
    }

    /// The plain flow model: no factors, no envelope, no acknowledgements, unweighted sharing.
    pub fn plain() -> Model {
        Model {
            bandwidth_factor: Piecewise::constant(1.0),
            latency_factor: Piecewise::constant(1.0),
            eager_threshold: 65536,
            envelope: 0,
            crosstraffic: 0.0,
            weight_s: 0.0,
            tcp_gamma: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_takes_the_factor_of_the_largest_boundary_below_it() {
        let m = Model::smpi();
        assert_eq!(m.bandwidth_factor.at(16.0), 0.812084);
        assert_eq!(m.bandwidth_factor.at(257.0), 0.812084);
        assert_eq!(m.bandwidth_factor.at(258.0), 0.338112);
        assert_eq!(m.bandwidth_factor.at(32784.0), 0.697866);
        assert_eq!(m.latency_factor.at(1e6), 11.6436);
        assert!(Piecewise::parse("x", "1:a").is_err());
        assert_eq!(Piecewise::parse("x", "2.5").unwrap().at(1e9), 2.5);
    }
}
