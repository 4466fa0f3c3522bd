//! A build aimed at the platform given with `--platform`: the application and the skeleton
//! simulated there, the skeleton cut further where its messages hold it over its target, and
//! its factor the ratio of their simulated times (Xu & Subhlok 2008, §3).

use std::path::Path;

use mpiskel_cut::fidelity::{Decision, PanelRow};
use mpiskel_cut::pipeline::Built;
use mpiskel_logicalize::LogicalTrace;
use mpiskel_simulate::fidelity::Panel;
use mpiskel_simulate::platform::Platform;

use crate::error::{ensure, Result};
use crate::observe::Observer;
use crate::options::BuildOptions;
use crate::policy::unchecked;

/// Builds again, at most, for a target shortened by what the skeleton's messages take on the
/// platform beyond its estimate ([`crate::build::build`] with a platform).
const AIM_ROUNDS: usize = 4;

/// The application's time and the skeleton's own on `platform` (its file and the platform read
/// from it; ranks placed by `hostfile`),
/// seconds, as `mpiskel simulate` gives them from the skeleton folder: the skeleton's program
/// standing for the application ([`mpiskel_simulate::skeleton::lower`]), and the skeleton as it
/// runs ([`mpiskel_simulate::skeleton::lower_as_run`]), compute blocks recorded as seconds
/// counted at `speed` flop/s. A trace without call times (SimGrid's time-independent format)
/// records no time for its messages: its own span is its computation alone, and a skeleton's
/// estimate from it leaves out what its messages take; simulated where the application ran,
/// both count them, and Xu & Subhlok's factor (their ratio, 2008, §3) holds there.
pub fn platform_times(
    skel: &mpiskel_program::Skeleton,
    scaling: &mpiskel_cut::scale::Scaling,
    (platform, pf): (&Path, &mpiskel_simulate::platform::Platform),
    hostfile: Option<&Path>,
    speed: f64,
) -> Result<PlatformTimes> {
    use mpiskel_simulate::engine::{simulate_marked, Options};
    use mpiskel_simulate::model::Model;
    use mpiskel_simulate::platform::placement;
    use mpiskel_simulate::skeleton::{
        exposure, lower, lower_as_run, lower_as_run_uncut, price, Lowered,
    };
    let place = placement(pf, hostfile, skel.n_ranks as usize)?;
    let options = Options {
        model: pf.model.clone().unwrap_or_else(Model::smpi),
        trace_speed: speed,
        fast_forward: false,
        ..Options::default()
    };
    let run = |l: &Lowered| -> Result<(Vec<Vec<f64>>, Vec<f64>)> {
        let (sim, times) = simulate_marked(&l.traces, pf, &place, &options, &l.marks, None)?;
        ensure!(
            sim.stuck.is_empty(),
            "the skeleton's program could not run to its end on {}: {} ranks stuck",
            platform.display(),
            sim.stuck.len()
        );
        Ok((times, sim.ranks.iter().map(|r| r.end_s).collect()))
    };
    let app_program = lower(skel, 0, false);
    let (times, ends) = run(&app_program)?;
    let app_s = price(&app_program, &times, &ends).predicted_s;
    let cut = lower_as_run(skel, 0, scaling.compute_shrink);
    let (cut_times, cut_ends) = run(&cut)?;
    let skeleton_s = price(&cut, &cut_times, &cut_ends).predicted_s;
    let whole = lower_as_run_uncut(skel, 0);
    let (whole_times, whole_ends) = run(&whole)?;
    let exposure = exposure((&cut, &cut_times, &cut_ends), (&whole, &whole_times, &whole_ends));
    ensure!(
        app_s > 0.0 && skeleton_s > 0.0,
        "simulated on {}, the application or the skeleton took no time",
        platform.display()
    );
    Ok(PlatformTimes { app_s, skeleton_s, exposure })
}

/// What [`platform_times`] simulates.
#[derive(Debug, Clone, Copy)]
pub struct PlatformTimes {
    /// The application's time: the skeleton's program standing for it.
    pub app_s: f64,
    /// The skeleton's own time, as it runs.
    pub skeleton_s: f64,
    /// What the compute cut adds to the skeleton's prediction there, as a share
    /// ([`mpiskel_simulate::skeleton::exposure`]).
    pub exposure: f64,
}

/// The build aimed at `platform` (its placement by `o`'s host file): the application and the
/// skeleton simulated there, the skeleton cut further where its messages hold it over its
/// target, and its scaling set from the simulated times; the panel's rows in `checked`
/// measured again. Notes on what it did are pushed on `notes`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn aim(
    o: &BuildOptions,
    (platform, pf): (&Path, &Platform),
    built: &mut Built,
    lt: &mut LogicalTrace,
    (app_time, source): (f64, &str),
    fidelity: Option<&(Panel, Vec<f64>)>,
    checked: &mut Option<(Vec<PanelRow>, Option<Decision>)>,
    notes: &mut Vec<String>,
    observer: &dyn Observer,
) -> Result<()> {
    let _busy = observer.busy("simulating the application and the skeleton on the platform");
    let times = |b: &mpiskel_cut::pipeline::Built| {
        platform_times(&b.skeleton, &b.scaling, (platform, pf), o.hostfile.as_deref(), o.flops)
    };
    let mut at = times(built)?;
    // Over its target there, what its messages take beyond the estimate is taken from its
    // computation too (a second of computation is one there and in the trace): made again
    // for a target shorter by the excess, while that brings the simulated skeleton closer
    // and the deeper cut does not make its prediction grow, by waiting for messages its
    // computation hid ([`PlatformTimes::exposure`]), by more than `removal::TOLERANCE` (or
    // than the first build's cut does already). Past that bound the target is searched by
    // bisection. `AIM_ROUNDS` builds at most.
    // The time steps sampled beyond the target are meant (`Scaling::sampled_extra_s`).
    let share = (built.scaling.target_s + built.scaling.sampled_extra_s) / built.scaling.app_time_s;
    let bound = mpiskel_cut::removal::TOLERANCE.max(at.exposure);
    let mut held = false;
    if !o.whole_compute {
        let (mut lo, mut hi) = (0.0f64, None::<f64>);
        for _ in 0..AIM_ROUNDS {
            let excess = at.skeleton_s - share * at.app_s;
            if excess <= 0.0 {
                break;
            }
            let by = hi.map_or(lo + excess, |h| (lo + h) / 2.0);
            let again = mpiskel_cut::pipeline::make_shorter(
                lt,
                app_time,
                source,
                o.target_time,
                o.strict,
                by,
            );
            let Ok(again) = again else { break };
            let t = times(&again)?;
            if t.exposure > bound {
                (hi, held) = (Some(by), true);
                continue;
            }
            if t.skeleton_s >= at.skeleton_s * (1.0 - 1e-3) {
                break;
            }
            (*built, at, lo) = (again, t, by);
        }
    }
    let PlatformTimes { app_s, skeleton_s: own_s, exposure } = at;
    let s = &mut built.scaling;
    notes.push(format!(
        "on {} the application takes {app_s:.6} s and the skeleton {own_s:.6} s, as \
         simulated (the trace gave {:.6} s and an estimate of {:.6} s): the factor is their \
         ratio, {:.3}; its compute cut moves its own prediction there by {:+.2} % (the \
         blocks it shortens wait differently for messages their computation hid)",
        platform.display(),
        s.app_time_s,
        s.skeleton_estimate_s,
        app_s / own_s,
        100.0 * exposure
    ));
    if own_s > 1.1 * share * app_s {
        let why = if held {
            format!(
                "its computation is cut as far as it can be without its blocks, shortened, \
                 waiting for messages their computation hid (cut further, its prediction \
                 would grow by more than {:.1} %), and what runs whole holds up the rest",
                100.0 * bound
            )
        } else {
            "what holds it up is what runs whole".to_owned()
        };
        notes.push(format!(
            "on {} the skeleton takes {:.1} % of the application's time, over its target \
             of {:.1} %: {why} (see the other notes)",
            platform.display(),
            100.0 * own_s / app_s,
            100.0 * share
        ));
    }
    s.target_s = share * app_s;
    s.app_time_s = app_s;
    s.app_time_source = format!(
        "as simulated on {} with the skeleton's program standing for it, as `mpiskel \
         simulate` does",
        platform.display()
    );
    s.skeleton_estimate_s = own_s;
    s.factor = app_s / own_s;
    // Aimed again at the platform, the program may have changed: its panel is measured
    // again (the decision stays the one made before the aim).
    if let (Some((panel, app)), Some((rows, _))) = (&fidelity, checked.as_mut()) {
        let check = crate::policy::Check { panel, app, bound: o.max_error };
        match check.rows(built) {
            Ok(r) => *rows = r,
            Err(e) => {
                notes.push(unchecked(&e));
                *checked = None;
            }
        }
    }
    Ok(())
}
