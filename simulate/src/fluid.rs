//! Max-min fair sharing of resources among concurrent activities (flows on links, computations
//! on processors), re-solved on the connected component an activity joins or leaves.
//!
//! Each variable (an activity's rate) uses some resources with a coefficient, has a sharing
//! penalty (its share on a resource is inversely proportional to it) and an upper bound.
//! Progressive filling (Bertsekas & Gallager 1992, §6.5.2; SimGrid's `lmm` solver, Casanova et
//! al. 2014): the resource whose remaining capacity over its unfixed load, Σ coeff / penalty, is
//! least saturates first, fixing its variables at that level over their penalty, unless a
//! variable's bound is reached before. A fat-pipe resource bounds each of its variables alone.
//! A variable with penalty 0 takes no share (a flow still paying its latency).
//!
//! Cost: O(k · (n + m)) per solve for a component of n variables over m resources with k
//! saturation steps (k ≤ n + m); only the component touched by a change is solved again.

/// A resource: a link direction or a host's processors.
#[derive(Debug, Clone)]
struct Resource {
    capacity: f64,
    fatpipe: bool,
    /// Variables that currently share it (penalty > 0).
    vars: Vec<usize>,
}

/// One activity's rate variable.
#[derive(Debug, Clone)]
struct Var {
    uses: Vec<(usize, f64)>,
    penalty: f64,
    bound: f64,
    value: f64,
    alive: bool,
}

/// The sharing system.
#[derive(Debug, Default)]
pub struct System {
    resources: Vec<Resource>,
    vars: Vec<Var>,
    free: Vec<usize>,
    // Scratch, kept to avoid reallocating per solve.
    mark_res: Vec<u32>,
    mark_var: Vec<u32>,
    epoch: u32,
}

/// A rate that changed: the variable, its value before and after.
pub type Change = (usize, f64, f64);

impl System {
    /// Adds a resource of `capacity` units per second.
    pub fn add_resource(&mut self, capacity: f64, fatpipe: bool) -> usize {
        self.resources.push(Resource { capacity, fatpipe, vars: Vec::new() });
        self.mark_res.push(0);
        self.resources.len() - 1
    }

    /// Adds a variable; it shares its resources once its penalty is positive. Returns its id.
    pub fn add_var(&mut self, uses: Vec<(usize, f64)>, penalty: f64, bound: f64) -> usize {
        let v = Var { uses, penalty: 0.0, bound, value: 0.0, alive: true };
        let id = match self.free.pop() {
            Some(i) => {
                self.vars[i] = v;
                i
            }
            None => {
                self.vars.push(v);
                self.mark_var.push(0);
                self.vars.len() - 1
            }
        };
        if penalty > 0.0 {
            self.set_penalty(id, penalty);
        }
        id
    }

    /// Sets a variable's penalty (0 withdraws it from sharing).
    pub fn set_penalty(&mut self, id: usize, penalty: f64) {
        let was = self.vars[id].penalty > 0.0;
        self.vars[id].penalty = penalty;
        let now = penalty > 0.0;
        if was != now {
            for k in 0..self.vars[id].uses.len() {
                let r = self.vars[id].uses[k].0;
                let list = &mut self.resources[r].vars;
                if now {
                    list.push(id);
                } else if let Some(p) = list.iter().position(|&x| x == id) {
                    list.swap_remove(p);
                }
            }
        }
        if !now {
            self.vars[id].value = 0.0;
        }
    }

    /// Removes a variable; its id may be reused.
    pub fn remove_var(&mut self, id: usize) {
        self.set_penalty(id, 0.0);
        self.vars[id].alive = false;
        self.vars[id].uses.clear();
        self.free.push(id);
    }

    /// The resources a variable uses.
    pub fn resources_of(&self, id: usize) -> Vec<usize> {
        self.vars[id].uses.iter().map(|u| u.0).collect()
    }

    /// A variable's current value.
    pub fn value(&self, id: usize) -> f64 {
        self.vars[id].value
    }

    /// Solves the component reachable from `seeds` (resources) again; returns every variable of
    /// it with its value before and after.
    pub fn solve_from(&mut self, seeds: &[usize], out: &mut Vec<Change>) {
        out.clear();
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark_res.iter_mut().for_each(|m| *m = 0);
            self.mark_var.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        let e = self.epoch;
        // Breadth-first over resources and the sharing variables on them.
        let mut res: Vec<usize> = Vec::new();
        let mut vars: Vec<usize> = Vec::new();
        for &s in seeds {
            if self.mark_res[s] != e {
                self.mark_res[s] = e;
                res.push(s);
            }
        }
        let mut i = 0;
        while i < res.len() {
            let r = res[i];
            i += 1;
            for k in 0..self.resources[r].vars.len() {
                let v = self.resources[r].vars[k];
                if self.mark_var[v] == e {
                    continue;
                }
                self.mark_var[v] = e;
                vars.push(v);
                for &(r2, _) in &self.vars[v].uses {
                    if self.mark_res[r2] != e {
                        self.mark_res[r2] = e;
                        res.push(r2);
                    }
                }
            }
        }
        if vars.is_empty() {
            return;
        }
        // Local numbering.
        let local_res: std::collections::HashMap<usize, usize> =
            res.iter().enumerate().map(|(i, &r)| (r, i)).collect();
        let mut remaining: Vec<f64> = res.iter().map(|&r| self.resources[r].capacity).collect();
        let fat: Vec<bool> = res.iter().map(|&r| self.resources[r].fatpipe).collect();
        // Effective bound: the variable's own, and each fat pipe's capacity over its coefficient.
        let bound: Vec<f64> = vars
            .iter()
            .map(|&v| {
                let var = &self.vars[v];
                var.uses
                    .iter()
                    .filter(|(r, c)| self.resources[*r].fatpipe && *c > 0.0)
                    .map(|(r, c)| self.resources[*r].capacity / c)
                    .fold(var.bound, f64::min)
            })
            .collect();
        let uses: Vec<Vec<(usize, f64)>> = vars
            .iter()
            .map(|&v| {
                self.vars[v]
                    .uses
                    .iter()
                    .filter(|(r, c)| !fat[local_res[r]] && *c > 0.0)
                    .map(|(r, c)| (local_res[r], *c))
                    .collect()
            })
            .collect();
        let pen: Vec<f64> = vars.iter().map(|&v| self.vars[v].penalty).collect();
        let mut value = vec![0.0f64; vars.len()];
        let mut fixed = vec![false; vars.len()];
        let mut unfixed = vars.len();
        let mut load = vec![0.0f64; res.len()];
        while unfixed > 0 {
            load.iter_mut().for_each(|l| *l = 0.0);
            for (j, u) in uses.iter().enumerate() {
                if !fixed[j] {
                    for &(r, c) in u {
                        load[r] += c / pen[j];
                    }
                }
            }
            let mut level = f64::INFINITY;
            for (r, &l) in load.iter().enumerate() {
                if l > 0.0 {
                    level = level.min(remaining[r].max(0.0) / l);
                }
            }
            for j in 0..vars.len() {
                if !fixed[j] {
                    level = level.min(bound[j] * pen[j]);
                }
            }
            if !level.is_finite() {
                // Nothing limits these variables: unbounded rates.
                for j in 0..vars.len() {
                    if !fixed[j] {
                        value[j] = f64::INFINITY;
                        fixed[j] = true;
                    }
                }
                break;
            }
            let tol = level * 1e-12;
            let saturated: Vec<bool> = load
                .iter()
                .enumerate()
                .map(|(r, &l)| l > 0.0 && remaining[r].max(0.0) / l <= level + tol)
                .collect();
            for j in 0..vars.len() {
                if fixed[j] {
                    continue;
                }
                let at_bound = bound[j] * pen[j] <= level + tol;
                let on_sat = uses[j].iter().any(|&(r, _)| saturated[r]);
                if at_bound || on_sat {
                    let v = if at_bound { bound[j] } else { level / pen[j] };
                    value[j] = v;
                    fixed[j] = true;
                    unfixed -= 1;
                    for &(r, c) in &uses[j] {
                        remaining[r] -= c * v;
                    }
                }
            }
        }
        for (j, &v) in vars.iter().enumerate() {
            let old = self.vars[v].value;
            self.vars[v].value = value[j];
            out.push((v, old, value[j]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solve(s: &mut System, seeds: &[usize]) -> Vec<f64> {
        let mut out = Vec::new();
        s.solve_from(seeds, &mut out);
        let mut v: Vec<(usize, f64)> = out.iter().map(|c| (c.0, c.2)).collect();
        v.sort_by_key(|x| x.0);
        v.into_iter().map(|x| x.1).collect()
    }

    #[test]
    fn flows_on_one_link_share_it_equally_and_a_second_bottleneck_frees_capacity() {
        let mut s = System::default();
        let a = s.add_resource(10.0, false);
        let b = s.add_resource(2.0, false);
        // Two flows on a, one of which also crosses b (capacity 2).
        s.add_var(vec![(a, 1.0)], 1.0, f64::INFINITY);
        s.add_var(vec![(a, 1.0), (b, 1.0)], 1.0, f64::INFINITY);
        assert_eq!(solve(&mut s, &[a]), [8.0, 2.0]);
    }

    #[test]
    fn penalties_weigh_shares_bounds_cap_them_and_fat_pipes_do_not_share() {
        let mut s = System::default();
        let a = s.add_resource(9.0, false);
        s.add_var(vec![(a, 1.0)], 1.0, f64::INFINITY);
        s.add_var(vec![(a, 1.0)], 2.0, f64::INFINITY);
        assert_eq!(solve(&mut s, &[a]), [6.0, 3.0]);
        let mut s = System::default();
        let a = s.add_resource(9.0, false);
        s.add_var(vec![(a, 1.0)], 1.0, 1.0);
        s.add_var(vec![(a, 1.0)], 1.0, f64::INFINITY);
        assert_eq!(solve(&mut s, &[a]), [1.0, 8.0]);
        let mut s = System::default();
        let f = s.add_resource(5.0, true);
        s.add_var(vec![(f, 1.0)], 1.0, f64::INFINITY);
        s.add_var(vec![(f, 1.0)], 1.0, f64::INFINITY);
        assert_eq!(solve(&mut s, &[f]), [5.0, 5.0]);
    }

    #[test]
    fn a_variable_paying_its_latency_takes_no_share_until_its_penalty_is_set() {
        let mut s = System::default();
        let a = s.add_resource(4.0, false);
        let x = s.add_var(vec![(a, 1.0)], 1.0, f64::INFINITY);
        let y = s.add_var(vec![(a, 1.0)], 0.0, f64::INFINITY);
        assert_eq!(solve(&mut s, &[a]), [4.0]);
        s.set_penalty(y, 1.0);
        assert_eq!(solve(&mut s, &[a]), [2.0, 2.0]);
        s.remove_var(x);
        assert_eq!(solve(&mut s, &[a]), [4.0]);
        assert_eq!(s.value(y), 4.0);
    }
}
